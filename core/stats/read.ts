/**
 * A server's figures over a range, at the resolution the range needs: the samples themselves for
 * steps under a minute while they are kept, the 1-minute rollups while they are kept, the
 * 15-minute rollups for older ranges. Each step's point is the average over it,
 * weighted by samples, and its worst.
 */
import { sql, Sql, type SqlRunner } from "../db/sql.ts";
import { float, nullable, row, text, timestamp } from "../db/rows.ts";
import { fieldFail } from "../errors.ts";
import type { StatsRetention } from "./partitions.ts";

export const metrics = ["cpu", "memory", "players", "tps", "mspt", "disk"] as const;
export type MetricName = (typeof metrics)[number];

/** How each metric is read from the samples and from a rollup: the average and the worst. */
const columns: Record<MetricName, { raw: [string, string]; rolled: [string, string] }> = {
  cpu: { raw: ["avg(cpu)", "max(cpu)"], rolled: ["sum(cpu_avg * samples) / nullif(sum(case when cpu_avg is null then 0 else samples end), 0)", "max(cpu_max)"] },
  memory: {
    raw: ["avg(memory)", "max(memory)"],
    rolled: ["sum(memory_avg * samples) / nullif(sum(case when memory_avg is null then 0 else samples end), 0)", "max(memory_max)"],
  },
  players: {
    raw: ["avg(players)", "max(players)"],
    rolled: ["sum(players_avg * samples) / nullif(sum(case when players_avg is null then 0 else samples end), 0)", "max(players_max)"],
  },
  tps: { raw: ["avg(tps)", "min(tps)"], rolled: ["sum(tps_avg * samples) / nullif(sum(case when tps_avg is null then 0 else samples end), 0)", "min(tps_min)"] },
  mspt: { raw: ["avg(mspt)", "max(mspt)"], rolled: ["sum(mspt_avg * samples) / nullif(sum(case when mspt_avg is null then 0 else samples end), 0)", "max(mspt_max)"] },
  disk: { raw: ["max(disk)", "max(disk)"], rolled: ["max(disk_max)", "max(disk_max)"] },
};

export const maxPoints = 3_000;
const niceSteps = [10, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400];

export type Resolution = "samples" | "1m" | "15m";

/**
 * The step (seconds) and the table a range is read at. `fresh` reads the samples whenever they are
 * still kept, whatever the step: up to the last one, where a rollup lags a minute or two behind.
 */
export function resolutionFor(from: Date, to: Date, stepSeconds: number, now: Date, retention: StatsRetention, fresh = false): { step: number; resolution: Resolution } {
  const rangeSeconds = (to.getTime() - from.getTime()) / 1000;
  if (!(rangeSeconds > 0)) throw fieldFail([{ field: "to", message: "must be after from" }]);
  let step = stepSeconds > 0 ? Math.max(10, stepSeconds) : (niceSteps.find((s) => rangeSeconds / s <= 300) ?? 86400);
  const age = (now.getTime() - from.getTime()) / 1000;
  let resolution: Resolution = "15m";
  if ((step < 60 || fresh) && age <= retention.rawHours * 3600) resolution = "samples";
  // Within their days the minute rollups serve any coarser step too: they hold the quarter hour under way.
  else if (age <= retention.minuteDays * 86400) resolution = "1m";
  // A rollup has no finer points than its own.
  step = Math.max(step, resolution === "1m" ? 60 : resolution === "15m" ? 900 : 10);
  if (rangeSeconds / step > maxPoints) throw fieldFail([{ field: "step_seconds", message: `gives more than ${maxPoints} points for this range; use a larger step` }]);
  return { step, resolution };
}

export interface SeriesPoint {
  at: Date;
  value: number;
  worst: number;
}

/** Each metric's points, read in one statement: a step with no figure for a metric has no point of it. */
export async function readSeries(
  query: SqlRunner,
  o: { serverId: string; from: Date; to: Date; step: number; resolution: Resolution; metrics: readonly MetricName[] },
): Promise<Map<MetricName, SeriesPoint[]>> {
  const { table, time } = source(o.resolution);
  // Column expressions and table names are this module's own text; the values are parameters.
  const picked = o.metrics.map((m, i) => {
    const [value, worst] = o.resolution === "samples" ? columns[m].raw : columns[m].rolled;
    return `(${value})::float8 as v${i}, (${worst})::float8 as w${i}`;
  });
  const select = new Sql(
    [
      `select date_bin(make_interval(secs => `,
      `), ${time}, timestamptz 'epoch') as at, ${picked.join(", ")} from ${table} where server_id = `,
      ` and ${time} >= `,
      ` and ${time} < `,
      ` group by 1 order by 1`,
    ],
    [o.step, o.serverId, o.from, o.to],
  );
  const decode = row({
    at: timestamp,
    ...Object.fromEntries(
      o.metrics.flatMap((_, i) => [
        [`v${i}`, nullable(float)],
        [`w${i}`, nullable(float)],
      ]),
    ),
  });
  const rows = (await query.rows(sql`${select}`, decode)) as Array<Record<string, number | null> & { at: Date }>;
  const out = new Map<MetricName, SeriesPoint[]>();
  o.metrics.forEach((m, i) => {
    const points: SeriesPoint[] = [];
    for (const r of rows) {
      const value = r[`v${i}`];
      const worst = r[`w${i}`];
      if (value !== null && worst !== null) points.push({ at: r.at, value, worst });
    }
    out.set(m, points);
  });
  return out;
}

/** The table and time column a resolution is read from (the names are this module's own text). */
function source(resolution: Resolution): { table: string; time: string } {
  if (resolution === "samples") return { table: "server_samples", time: "at" };
  return { table: resolution === "1m" ? "server_stats_1m" : "server_stats_15m", time: "bucket" };
}

/**
 * Players of several servers, per step and server, in one statement: each server's average and
 * peak within the step, for the servers that reported in it.
 */
export async function readPlayersByServer(
  query: SqlRunner,
  o: { serverIds: readonly string[]; from: Date; to: Date; step: number; resolution: Resolution },
): Promise<Map<string, SeriesPoint[]>> {
  const { table, time } = source(o.resolution);
  const [value, worst] = o.resolution === "samples" ? columns.players.raw : columns.players.rolled;
  const select = new Sql(
    [
      `select date_bin(make_interval(secs => `,
      `), ${time}, timestamptz 'epoch') as at, server_id, (${value})::float8 as v, (${worst})::float8 as w from ${table} where server_id = any(`,
      `::uuid[]) and ${time} >= `,
      ` and ${time} < `,
      ` group by 1, 2 order by 1`,
    ],
    [o.step, o.serverIds, o.from, o.to],
  );
  const rows = await query.rows(sql`${select}`, row({ at: timestamp, server_id: text, v: nullable(float), w: nullable(float) }));
  const out = new Map<string, SeriesPoint[]>();
  for (const r of rows) {
    if (r.v === null || r.w === null) continue;
    const points = out.get(r.server_id) ?? [];
    points.push({ at: r.at, value: r.v, worst: r.w });
    out.set(r.server_id, points);
  }
  return out;
}

/** A series column by column (StatsColumns), as the API answers it. */
export function toColumns(points: readonly SeriesPoint[]): { atSeconds: number[]; values: number[]; worst: number[] } {
  return { atSeconds: points.map((p) => p.at.getTime() / 1000), values: points.map((p) => p.value), worst: points.map((p) => p.worst) };
}

/** The sum of several servers' series per step: their averages, and their peaks (at most this many at once). */
export function sumSeries(series: Iterable<SeriesPoint[]>): SeriesPoint[] {
  const byTime = new Map<number, SeriesPoint>();
  for (const points of series) {
    for (const p of points) {
      const sum = byTime.get(p.at.getTime()) ?? { at: p.at, value: 0, worst: 0 };
      sum.value += p.value;
      sum.worst += p.worst;
      byTime.set(p.at.getTime(), sum);
    }
  }
  return [...byTime.values()].sort((a, b) => a.at.getTime() - b.at.getTime());
}
