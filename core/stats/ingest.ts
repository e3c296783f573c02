/**
 * The samples agents send (StatsSample), written in batches: each instance gathers what its agent
 * streams bring and inserts them together, one statement for up to {@link maxBatch} rows, at least
 * every {@link flushEveryMs}. A sample is kept with the time it arrived (an agent's clock may be
 * wrong). A batch that cannot be written is logged and dropped: figures are not worth holding an
 * agent's stream for. One per process, built by the composition root.
 */
import type { Logger } from "pino";
import type { StatsSample } from "../../gen/outpost/agent/v1/agent_service_pb.js";
import type { Clock } from "../clock.ts";
import { sql, type SqlRunner } from "../db/sql.ts";
import { ensurePartitions } from "./partitions.ts";
import { jobFailureLog } from "../log-throttle.ts";

export const flushEveryMs = 1_000;
export const maxBatch = 2_000;
/** Samples held at most while the database is slow; past it, the oldest are dropped. */
const maxHeld = 50_000;

export interface StatsIngest {
  /** Takes a sample of the server's, to be written with the next batch. */
  add(serverId: string, sample: Omit<StatsSample, "$typeName" | "$unknown">): void;
  /** Writes what is held now. */
  flush(): Promise<void>;
  /** Writes what is held and stops the timer. */
  close(): Promise<void>;
}

interface Held {
  serverId: string;
  at: Date;
  cpu: number | null;
  memory: string | null;
  players: number | null;
  tps: number | null;
  mspt: number | null;
  disk: string | null;
}

/** Inserts the rows in one statement: a column of values each, unnested. */
export async function insertSamples(query: SqlRunner, rows: readonly Held[]): Promise<void> {
  const col = <K extends keyof Held>(k: K) => rows.map((r) => r[k]);
  await query.run(
    sql`insert into server_samples (server_id, at, cpu, memory, players, tps, mspt, disk)
        select * from unnest(${col("serverId")}::uuid[], ${col("at")}::timestamptz[], ${col("cpu")}::real[], ${col("memory")}::bigint[],
                             ${col("players")}::int[], ${col("tps")}::real[], ${col("mspt")}::real[], ${col("disk")}::bigint[])`,
  );
}

export function createStatsIngest(deps: { query: SqlRunner; clock: Clock; logger: Logger }): StatsIngest {
  let held: Held[] = [];
  let writing: Promise<void> = Promise.resolve();
  /** The UTC day whose partitions are known to exist. */
  let readyDay = "";
  const writeFailed = jobFailureLog(deps.logger, "server samples could not be written; dropped", "warn");

  async function write(rows: Held[]): Promise<void> {
    const dayOf = rows[0].at.toISOString().slice(0, 10);
    if (dayOf !== readyDay) {
      await ensurePartitions(deps.query, rows[0].at);
      readyDay = dayOf;
    }
    for (let i = 0; i < rows.length; i += maxBatch) await insertSamples(deps.query, rows.slice(i, i + maxBatch));
  }

  const flush = () => {
    const rows = held;
    held = [];
    writing = writing.then(() => (rows.length ? write(rows).catch((error) => writeFailed(error, { samples: rows.length })) : undefined));
    return writing;
  };
  const timer = setInterval(() => void flush(), flushEveryMs).unref();

  return {
    add(serverId, s) {
      held.push({
        serverId,
        at: deps.clock.now(),
        cpu: s.cpuPercent ?? null,
        memory: s.memoryBytes === undefined ? null : String(s.memoryBytes),
        players: s.players ?? null,
        tps: s.tps ?? null,
        mspt: s.mspt ?? null,
        disk: s.diskBytes === undefined ? null : String(s.diskBytes),
      });
      if (held.length > maxHeld) held = held.slice(-maxHeld);
      if (held.length >= maxBatch) void flush();
    },
    flush,
    async close() {
      clearInterval(timer);
      await flush();
    },
  };
}
