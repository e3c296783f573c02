/**
 * The time partitions of the statistics tables (migration 0035): made ahead of the data that goes
 * in them, and dropped whole once they are older than what is kept — never deleted row by row.
 * Samples and 1-minute rollups have a partition per UTC day, 15-minute rollups one per UTC month,
 * named by it (`server_samples_p20261129`, `server_stats_15m_p202611`). Every instance may make
 * or drop them; one that finds another was first goes on.
 */
import { Sql, sql, type SqlRunner } from "../db/sql.ts";
import { row, text } from "../db/rows.ts";

/** How long each kind of figure is kept (STATS_RAW_HOURS, STATS_MINUTE_DAYS, STATS_QUARTER_DAYS). */
export interface StatsRetention {
  rawHours: number;
  minuteDays: number;
  quarterDays: number;
}

export const defaultRetention: StatsRetention = { rawHours: 48, minuteDays: 14, quarterDays: 365 };

interface PartitionedTable {
  table: "server_samples" | "server_stats_1m" | "server_stats_15m";
  unit: "day" | "month";
  /** How long its rows are kept, in milliseconds. */
  keepMs(r: StatsRetention): number;
}

const day = 24 * 3600_000;
export const partitioned: readonly PartitionedTable[] = [
  { table: "server_samples", unit: "day", keepMs: (r) => r.rawHours * 3600_000 },
  { table: "server_stats_1m", unit: "day", keepMs: (r) => r.minuteDays * day },
  { table: "server_stats_15m", unit: "month", keepMs: (r) => r.quarterDays * day },
];

/** The start of the UTC day or month holding `at`, and of the next. */
function span(unit: "day" | "month", at: Date): { from: Date; to: Date } {
  const y = at.getUTCFullYear();
  const m = at.getUTCMonth();
  if (unit === "month") return { from: new Date(Date.UTC(y, m, 1)), to: new Date(Date.UTC(y, m + 1, 1)) };
  const from = new Date(Date.UTC(y, m, at.getUTCDate()));
  return { from, to: new Date(from.getTime() + day) };
}

function partitionName(t: PartitionedTable, from: Date): string {
  const iso = from.toISOString();
  return `${t.table}_p${iso.slice(0, 4)}${iso.slice(5, 7)}${t.unit === "day" ? iso.slice(8, 10) : ""}`;
}

/** A statement made of trusted text (table names built here, never from input). */
const ddl = (text: string) => new Sql([text], []);

/** Whether the error says another instance made or dropped it first. */
const raced = (error: unknown) => ["42P07", "23505", "42P01", "40P01"].includes((error as { code?: string }).code ?? "");

/** Makes the partitions holding `at` and the next day (or month), where missing. */
export async function ensurePartitions(query: SqlRunner, at: Date): Promise<void> {
  for (const t of partitioned) {
    for (const when of [at, new Date(span(t.unit, at).to.getTime() + 1)]) {
      const { from, to } = span(t.unit, when);
      const name = partitionName(t, from);
      const statement = ddl(`create table if not exists "${name}" partition of "${t.table}" for values from ('${from.toISOString()}') to ('${to.toISOString()}')`);
      await query.run(statement).catch((error) => {
        if (!raced(error)) throw error;
      });
    }
  }
}

const partitionRow = row({ name: text });

/** Drops the partitions wholly older than what is kept; returns their names. */
export async function dropOldPartitions(query: SqlRunner, now: Date, retention: StatsRetention): Promise<string[]> {
  const dropped: string[] = [];
  for (const t of partitioned) {
    const cutoff = now.getTime() - t.keepMs(retention);
    const parts = await query.rows(
      sql`select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid join pg_class p on p.oid = i.inhparent where p.relname = ${t.table}`,
      partitionRow,
    );
    for (const { name } of parts) {
      const stamp = /_p(\d{4})(\d{2})(\d{2})?$/.exec(name);
      if (!stamp) continue;
      const from = new Date(Date.UTC(Number(stamp[1]), Number(stamp[2]) - 1, stamp[3] ? Number(stamp[3]) : 1));
      if (span(t.unit, from).to.getTime() > cutoff) continue;
      await query.run(ddl(`drop table if exists "${name}"`)).catch((error) => {
        if (!raced(error)) throw error;
      });
      dropped.push(name);
    }
  }
  return dropped;
}
