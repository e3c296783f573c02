/**
 * The rollups of the samples, made incrementally: each minute one instance (the one that gets the
 * lock) folds the samples of the minutes since the last fold into 1-minute rows, and those into
 * 15-minute rows, and drops the partitions older than what is kept. `stats_rollups` says up to
 * when each is made; a fold is an upsert, so doing one again changes nothing.
 */
import type { Logger } from "pino";
import type { CoreDeps } from "../deps.ts";
import { inTransaction, sql, type SqlRunner } from "../db/sql.ts";
import { bool, nullable, row, timestamp } from "../db/rows.ts";
import { dropOldPartitions, ensurePartitions, type StatsRetention } from "./partitions.ts";
import { jobFailureLog } from "../log-throttle.ts";

/** How often an instance tries to fold. */
export const rollupEveryMs = 60_000;
/** Samples this recent may still be on their way (batched every second): their minute waits. */
const settleMs = 30_000;
/** The lock that makes one instance fold at a time (pg_try_advisory_xact_lock). */
const lockKey = 7_302_030;

const minute = 60_000;
const quarter = 15 * minute;

const untilRow = row({ rolled_until: nullable(timestamp) });

async function rolledUntil(query: SqlRunner, name: string): Promise<Date | null> {
  return (await query.one(sql`select rolled_until from stats_rollups where name = ${name}`, untilRow))?.rolled_until ?? null;
}

async function markRolled(query: SqlRunner, name: string, until: Date): Promise<void> {
  await query.run(sql`insert into stats_rollups (name, rolled_until) values (${name}, ${until}) on conflict (name) do update set rolled_until = excluded.rolled_until`);
}

const floorTo = (at: Date, ms: number) => new Date(Math.floor(at.getTime() / ms) * ms);

/** Folds samples into minutes, and minutes into quarter hours, up to what is complete at `now`. */
export async function rollUp(query: SqlRunner, now: Date, retention: StatsRetention): Promise<{ minutes: Date | null; quarters: Date | null }> {
  const minutesUntil = floorTo(new Date(now.getTime() - settleMs), minute);
  const minutesFrom = (await rolledUntil(query, "1m")) ?? new Date(minutesUntil.getTime() - retention.rawHours * 3600_000);
  if (minutesFrom < minutesUntil) {
    await ensurePartitions(query, minutesFrom);
    await ensurePartitions(query, minutesUntil);
    await query.run(
      sql`insert into server_stats_1m (server_id, bucket, samples, cpu_avg, cpu_max, memory_avg, memory_max, players_avg, players_max, tps_avg, tps_min, mspt_avg, mspt_max, disk_max)
          select server_id, date_bin(interval '1 minute', at, timestamptz 'epoch'), count(*), avg(cpu), max(cpu), avg(memory), max(memory), avg(players), max(players), avg(tps), min(tps), avg(mspt), max(mspt), max(disk)
          from server_samples where at >= ${minutesFrom} and at < ${minutesUntil} group by 1, 2
          on conflict (server_id, bucket) do update set samples = excluded.samples, cpu_avg = excluded.cpu_avg, cpu_max = excluded.cpu_max, memory_avg = excluded.memory_avg,
            memory_max = excluded.memory_max, players_avg = excluded.players_avg, players_max = excluded.players_max, tps_avg = excluded.tps_avg, tps_min = excluded.tps_min,
            mspt_avg = excluded.mspt_avg, mspt_max = excluded.mspt_max, disk_max = excluded.disk_max`,
    );
    await markRolled(query, "1m", minutesUntil);
  }
  const quartersUntil = floorTo(minutesUntil, quarter);
  const quartersFrom = (await rolledUntil(query, "15m")) ?? floorTo(minutesFrom, quarter);
  if (quartersFrom < quartersUntil) {
    await query.run(
      sql`insert into server_stats_15m (server_id, bucket, samples, cpu_avg, cpu_max, memory_avg, memory_max, players_avg, players_max, tps_avg, tps_min, mspt_avg, mspt_max, disk_max)
          select server_id, date_bin(interval '15 minutes', bucket, timestamptz 'epoch'), sum(samples),
                 sum(cpu_avg * samples) / nullif(sum(case when cpu_avg is null then 0 else samples end), 0), max(cpu_max),
                 sum(memory_avg * samples) / nullif(sum(case when memory_avg is null then 0 else samples end), 0), max(memory_max),
                 sum(players_avg * samples) / nullif(sum(case when players_avg is null then 0 else samples end), 0), max(players_max),
                 sum(tps_avg * samples) / nullif(sum(case when tps_avg is null then 0 else samples end), 0), min(tps_min),
                 sum(mspt_avg * samples) / nullif(sum(case when mspt_avg is null then 0 else samples end), 0), max(mspt_max), max(disk_max)
          from server_stats_1m where bucket >= ${quartersFrom} and bucket < ${quartersUntil} group by 1, 2
          on conflict (server_id, bucket) do update set samples = excluded.samples, cpu_avg = excluded.cpu_avg, cpu_max = excluded.cpu_max, memory_avg = excluded.memory_avg,
            memory_max = excluded.memory_max, players_avg = excluded.players_avg, players_max = excluded.players_max, tps_avg = excluded.tps_avg, tps_min = excluded.tps_min,
            mspt_avg = excluded.mspt_avg, mspt_max = excluded.mspt_max, disk_max = excluded.disk_max`,
    );
    await markRolled(query, "15m", quartersUntil);
  }
  return { minutes: minutesUntil, quarters: quartersUntil };
}

const lockedRow = row({ locked: bool });

/** One fold and clean-up, by whichever instance gets the lock; false when another holds it. */
export async function foldStats(deps: Pick<CoreDeps, "orm" | "clock">, retention: StatsRetention): Promise<boolean> {
  return deps.orm.em.fork().transactional(async (tx) => {
    const query = inTransaction(tx);
    const got = await query.one(sql`select pg_try_advisory_xact_lock(${lockKey}) as locked`, lockedRow);
    if (!got?.locked) return false;
    const now = deps.clock.now();
    await ensurePartitions(query, now);
    await rollUp(query, now, retention);
    await dropOldPartitions(query, now, retention);
    return true;
  });
}

/** Folds now and every {@link rollupEveryMs} (unref'd) until `stop`. */
export function startStatsFolding(
  deps: Pick<CoreDeps, "orm" | "clock"> & { logger: Logger; retention: StatsRetention },
  everyMs = rollupEveryMs,
): { stop(): Promise<void> } {
  const failed = jobFailureLog(deps.logger, "folding server statistics failed");
  const fold = () => foldStats(deps, deps.retention).then(() => undefined, failed);
  let running: Promise<void> = fold();
  const timer = setInterval(() => (running = running.then(fold)), everyMs).unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
