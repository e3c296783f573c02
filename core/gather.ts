/**
 * Many callers' small statements as few: while one batch is on its way to the database, the items
 * that arrive meanwhile wait for it and then go together in the next, up to `maxBatch`. An item
 * that finds nothing under way goes at once, alone, so nothing waits when the load is light, and an
 * item is never answered from a batch that was sent before it arrived. A batch still under way after
 * `stallMs` (its connection hung: a network that drops packets without a reset) no longer holds up
 * the next, which goes on another connection; the stalled one answers its own items when it ends.
 * At most {@link maxStalled} stalled batches are left running at once, so a slow database does not
 * lose more of its pool to them; past that, the next batch waits for one of them to end.
 *
 * The activity writer (core/activity/record.ts) and the credential lookups
 * (core/auth/credential-store.ts) share it: under bench:console's 20 callers each statement then
 * carries several calls' work, and a round trip to PostgreSQL is what a call costs most of.
 */
import { context, ROOT_CONTEXT } from "@opentelemetry/api";

export interface GatherOptions {
  /** The most items one batch carries. */
  maxBatch: number;
  /**
   * While busy (a batch ended less than `busyWithinMs` ago), a batch short of `maxBatch` also waits
   * this long for the items of that moment. 0 (the default) never waits.
   */
  gatherMs?: number;
  busyWithinMs?: number;
  /** How long a batch may hold up the next one. Unset: for as long as it takes. */
  stallMs?: number;
}

export interface Gatherer<T, R> {
  /** The item's result, once the batch it went in is done; rejects with the batch's failure. */
  submit(item: T): Promise<R>;
  /** Settles once every item submitted so far is done or has failed. */
  flush(): Promise<void>;
}

/**
 * The stallMs of the gatherers on core's pool: a statement of theirs normally answers in under a
 * millisecond, so one without an answer after a second is taken as hung.
 */
export const stalledAfterMs = 1_000;

/** Stalled batches (see stallMs) left running at once, besides the one under way. */
export const maxStalled = 2;

interface Pending<T, R> {
  item: T;
  resolve(result: R): void;
  reject(error: unknown): void;
}

/**
 * `run` gets a batch's items in the order they came and returns their results in that order; if it
 * throws, every item of the batch fails with that error.
 */
export function createGatherer<T, R>(run: (items: T[]) => Promise<R[]>, { maxBatch, gatherMs = 0, busyWithinMs = 0, stallMs }: GatherOptions): Gatherer<T, R> {
  const queue: Pending<T, R>[] = [];
  let draining: Promise<void> | undefined;
  /** Batches under way, stalled ones included. */
  const settling = new Set<Promise<void>>();
  /** When the last batch ended (performance.now()); -Infinity before the first. */
  let lastDone = -Infinity;
  const settle = async (batch: Pending<T, R>[]) => {
    try {
      const results = await run(batch.map((p) => p.item));
      batch.forEach((p, i) => p.resolve(results[i]));
    } catch (error) {
      for (const p of batch) p.reject(error);
    }
  };
  /** Settles the batch; resolves when it is settled, or once `stallMs` passed, whichever is first. */
  const send = (batch: Pending<T, R>[]): Promise<void> => {
    const settled = settle(batch).finally(() => settling.delete(settled));
    settling.add(settled);
    if (stallMs === undefined) return settled;
    let timer: NodeJS.Timeout | undefined;
    const stalled = new Promise<void>((resolve) => (timer = setTimeout(resolve, stallMs)));
    return Promise.race([settled, stalled]).finally(() => clearTimeout(timer));
  };
  const drain = async () => {
    try {
      while (queue.length) {
        if (gatherMs > 0 && queue.length < maxBatch && performance.now() - lastDone < busyWithinMs) await new Promise((resolve) => setTimeout(resolve, gatherMs));
        while (settling.size > maxStalled) await Promise.race(settling);
        await send(queue.splice(0, maxBatch));
        lastDone = performance.now();
      }
    } finally {
      draining = undefined;
    }
  };
  return {
    submit(item) {
      return new Promise<R>((resolve, reject) => {
        queue.push({ item, resolve, reject });
        // Outside the caller's context: the loop outlives the call that started it, and later
        // batches are nobody's request (nor its trace's).
        draining ??= context.with(ROOT_CONTEXT, drain);
      });
    },
    async flush() {
      while (draining || settling.size) await Promise.all([draining, ...settling]);
    },
  };
}
