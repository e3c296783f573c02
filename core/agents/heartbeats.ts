/**
 * Agents' heartbeats, written in batches: each instance gathers the heartbeats its streams bring
 * for up to {@link gatherMs} and writes them with one statement (markServersSeen), then answers
 * each stream from that statement's row. A fleet of 1,000 agents beating every 10 s is then a few
 * statements a second instead of a hundred, and the rank that tells whether a server is frozen is
 * computed once per organization and batch instead of once per heartbeat (issue 31: bench:fleet).
 *
 * Batches are written one after another on one connection, so a reconnect storm's heartbeats never
 * take more than that from the pool. A batch that fails fails each of its heartbeats, as a single
 * heartbeat's failure did: the stream ends and the agent reconnects. One per process, built by the
 * composition root.
 */
import type { AgentCaller } from "../context.ts";
import type { Clock } from "../clock.ts";
import type { SqlRunner } from "../db/sql.ts";
import { markServersSeen, type Beat, type BeatRow } from "./agent-queries.ts";

/** How long a heartbeat may wait for others to be written with it (agents beat every 10 s). */
export const gatherMs = 100;
/** The most heartbeats in one statement. */
export const maxBatch = 2_000;

export interface Heartbeats {
  /** Writes the heartbeat of `connectionId`'s stream with the next batch; resolves to what it found (presence.ts `beatState` reads it). */
  beat(agent: AgentCaller, connectionId: string): Promise<BeatRow>;
  /** Writes what is waiting, and stops. */
  close(): Promise<void>;
}

interface Waiting extends Beat {
  resolve(found: BeatRow): void;
  reject(error: unknown): void;
}

export function createHeartbeats(deps: { query: SqlRunner; clock: Clock; gatherMs?: number }): Heartbeats {
  let waiting: Waiting[] = [];
  let timer: NodeJS.Timeout | undefined;
  let writing: Promise<void> = Promise.resolve();

  async function write(batch: Waiting[]): Promise<void> {
    // A stream that beat twice within the batch is written once, and both get the answer.
    const same = new Map<string, Waiting[]>();
    for (const beat of batch) {
      const key = `${beat.serverId} ${beat.agentKeyHash} ${beat.connectionId}`;
      same.set(key, [...(same.get(key) ?? []), beat]);
    }
    const groups = [...same.values()];
    try {
      const rows = await markServersSeen(
        deps.query,
        groups.map(([beat]) => beat),
        deps.clock.now(),
      );
      groups.forEach((group, i) => {
        for (const beat of group) beat.resolve(rows[i]);
      });
    } catch (error) {
      for (const beat of batch) beat.reject(error);
    }
  }

  function flush(): Promise<void> {
    timer = undefined;
    const taken = waiting;
    waiting = [];
    for (let i = 0; i < taken.length; i += maxBatch) {
      const batch = taken.slice(i, i + maxBatch);
      writing = writing.then(() => write(batch));
    }
    return writing;
  }

  return {
    beat(agent, connectionId) {
      return new Promise<BeatRow>((resolve, reject) => {
        waiting.push({ serverId: agent.server.id, agentKeyHash: agent.keyHash, connectionId, resolve, reject });
        timer ??= setTimeout(() => void flush(), deps.gatherMs ?? gatherMs).unref();
      });
    },
    async close() {
      if (timer) clearTimeout(timer);
      await flush();
    },
  };
}
