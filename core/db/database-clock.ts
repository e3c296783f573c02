/**
 * One clock for every instance: the database's. Codes, tokens, sessions and claims get their
 * expiry from the instance that issues them and are checked by whichever instance is asked next,
 * so an instance whose clock runs ahead would make what it issues valid longer everywhere (and sign
 * ID tokens "issued" in the future). Each instance reads the database's time at start and every
 * minute, and its clock is its own plus the measured difference: all agree with PostgreSQL, to
 * within half a round trip.
 */
import type { Logger } from "pino";
import type { Clock } from "../deps.ts";
import type { SqlRunner } from "./sql.ts";
import { databaseTimeMs } from "./clock-queries.ts";

/** How often the difference is measured again (clocks drift; NTP steps them). */
export const clockSyncMs = 60_000;
/** A difference this large is worth a warning: the machine's clock is off, and its operator should know. */
const skewWarningMs = 5_000;

export interface DatabaseClock extends Clock {
  /** The database's time minus this process's, as last measured. */
  offsetMs(): number;
  /** Measures the difference again now. */
  sync(): Promise<void>;
  /** Stops measuring. */
  stop(): void;
}

/** `query`: statements outside any transaction (the pool's), on which the database's time is read. */
export async function createDatabaseClock(query: SqlRunner, local: Clock, logger: Logger, options: { resync: boolean } = { resync: true }): Promise<DatabaseClock> {
  let offset = 0;
  let measured = false;
  let warned = false;
  /** One reading: the difference, and the round trip it was measured across. */
  async function sample(): Promise<{ offset: number; roundTrip: number }> {
    const before = local.now().getTime();
    const database = await withTimeout(databaseTimeMs(query), sampleTimeoutMs);
    const after = local.now().getTime();
    return { offset: database - (before + after) / 2, roundTrip: after - before };
  }
  async function sync(): Promise<void> {
    // The fastest of a few readings: a slow one (a busy pool, a busy event loop) is off by half its round trip.
    let best = await sample();
    for (let i = 1; i < samples && best.roundTrip > goodRoundTripMs; i++) {
      const next = await sample();
      if (next.roundTrip < best.roundTrip) best = next;
    }
    // Too slow to trust once the clock is set: the last difference stays.
    if (measured && best.roundTrip > worstRoundTripMs) return;
    offset = best.offset;
    measured = true;
    const skewed = Math.abs(offset) > skewWarningMs;
    if (skewed && !warned) logger.warn({ offsetMs: Math.round(offset) }, "this machine's clock differs from the database's; Outpost keeps time by the database's");
    warned = skewed;
  }
  await sync();
  let syncing = false;
  const timer = options.resync
    ? setInterval(() => {
        if (syncing) return;
        syncing = true;
        sync()
          .catch((error) => logger.warn({ err: error }, "reading the database's time failed; keeping the last difference"))
          .finally(() => (syncing = false));
      }, clockSyncMs)
    : undefined;
  timer?.unref();
  return {
    now: () => new Date(local.now().getTime() + offset),
    offsetMs: () => offset,
    sync,
    stop: () => clearInterval(timer),
  };
}

/** Readings taken at most, and a round trip short enough to stop at. */
const samples = 3;
const goodRoundTripMs = 20;
/** A reading slower than this is not trusted to move the clock once it has been set. */
const worstRoundTripMs = 1_000;
/** A reading that takes longer fails (the last difference stays). */
const sampleTimeoutMs = 5_000;

function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
