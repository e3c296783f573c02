/**
 * The statements of schedules and their runs (migration 0034). Taking a run is one statement that
 * moves `next_run_at` on from the time that was due: of instances that try at once, one changes
 * the row and the others change nothing.
 */
import { randomUUID } from "node:crypto";
import { sql, type SqlRunner } from "../db/sql.ts";
import { arrayOf, bool, int, nullable, oneOf, row, text, timestamp, type Row } from "../db/rows.ts";
import { scheduleActions, type ScheduleTerms } from "./schedule-rules.ts";

export const scheduleRow = row({
  id: text,
  organization_id: text,
  server_id: text,
  name: text,
  cron: text,
  time_zone: text,
  action: oneOf(...scheduleActions),
  text: text,
  warning_minutes: arrayOf(int),
  enabled: bool,
  next_run_at: nullable(timestamp),
  warned_minutes: nullable(int),
  created_at: timestamp,
  updated_at: timestamp,
});
export type ScheduleRow = Row<typeof scheduleRow>;

export const runOutcomes = ["running", "ok", "failed", "skipped"] as const;
export type RunOutcome = (typeof runOutcomes)[number];

export const runRow = row({
  id: text,
  schedule_id: text,
  scheduled_for: timestamp,
  started_at: timestamp,
  finished_at: nullable(timestamp),
  outcome: oneOf(...runOutcomes),
  detail: text,
  manual: bool,
});
export type RunRow = Row<typeof runRow>;

export function insertSchedule(
  query: SqlRunner,
  s: { organizationId: string; serverId: string; terms: ScheduleTerms; nextRunAt: Date | null; now: Date },
): Promise<ScheduleRow | undefined> {
  const t = s.terms;
  return query.one(
    sql`insert into server_schedules (id, organization_id, server_id, name, cron, time_zone, action, text, warning_minutes, enabled, next_run_at, created_at, updated_at)
        values (${randomUUID()}, ${s.organizationId}, ${s.serverId}, ${t.name}, ${t.cron}, ${t.timeZone}, ${t.action}, ${t.text}, ${t.warningMinutes}, ${t.enabled}, ${s.nextRunAt}, ${s.now}, ${s.now})
        returning *`,
    scheduleRow,
  );
}

export function updateSchedule(query: SqlRunner, id: string, terms: ScheduleTerms, nextRunAt: Date | null, now: Date): Promise<ScheduleRow | undefined> {
  return query.one(
    sql`update server_schedules set name = ${terms.name}, cron = ${terms.cron}, time_zone = ${terms.timeZone}, action = ${terms.action}, text = ${terms.text},
          warning_minutes = ${terms.warningMinutes}, enabled = ${terms.enabled}, next_run_at = ${nextRunAt}, warned_minutes = null, updated_at = ${now}
        where id = ${id} returning *`,
    scheduleRow,
  );
}

export function findSchedule(query: SqlRunner, id: string): Promise<ScheduleRow | undefined> {
  return query.one(sql`select * from server_schedules where id = ${id}`, scheduleRow);
}

export function serverSchedules(query: SqlRunner, serverId: string): Promise<ScheduleRow[]> {
  return query.rows(sql`select * from server_schedules where server_id = ${serverId} order by created_at, id`, scheduleRow);
}

export async function deleteSchedule(query: SqlRunner, id: string): Promise<void> {
  await query.run(sql`delete from server_schedules where id = ${id}`);
}

/** Enabled schedules with a run due by `now`, or a warning not yet sent whose time has come. */
export function dueSchedules(query: SqlRunner, now: Date, limit: number): Promise<ScheduleRow[]> {
  return query.rows(
    sql`select * from server_schedules s where enabled and (next_run_at <= ${now} or (next_run_at <= ${new Date(now.getTime() + 60 * 60_000)} and exists (
          select 1 from unnest(s.warning_minutes) w where (s.warned_minutes is null or w < s.warned_minutes) and s.next_run_at - make_interval(mins => w) <= ${now})))
        order by next_run_at limit ${limit}`,
    scheduleRow,
  );
}

/** Takes the run due at `due` by moving the schedule on to `next`: the row as it is now, or undefined when another instance took it (or the schedule changed). */
export function takeDue(query: SqlRunner, id: string, due: Date, next: Date | null): Promise<ScheduleRow | undefined> {
  return query.one(
    sql`update server_schedules set next_run_at = ${next}, warned_minutes = null where id = ${id} and enabled and next_run_at = ${due} returning *`,
    scheduleRow,
  );
}

/** Takes the warning `minutes` before the run at `due`; false when another instance took it (or one as small). */
export async function takeWarning(query: SqlRunner, id: string, due: Date, minutes: number): Promise<boolean> {
  const taken = await query.run(
    sql`update server_schedules set warned_minutes = ${minutes} where id = ${id} and enabled and next_run_at = ${due} and (warned_minutes is null or warned_minutes > ${minutes})`,
  );
  return taken === 1;
}

export function insertRun(
  query: SqlRunner,
  r: { scheduleId: string; serverId: string; scheduledFor: Date; manual: boolean; outcome: RunOutcome; detail: string; now: Date },
): Promise<RunRow | undefined> {
  const finished = r.outcome === "running" ? null : r.now;
  return query.one(
    sql`insert into schedule_runs (id, schedule_id, server_id, scheduled_for, manual, started_at, finished_at, outcome, detail)
        values (${randomUUID()}, ${r.scheduleId}, ${r.serverId}, ${r.scheduledFor}, ${r.manual}, ${r.now}, ${finished}, ${r.outcome}, ${r.detail})
        on conflict do nothing returning *`,
    runRow,
  );
}

export function finishRun(query: SqlRunner, id: string, outcome: RunOutcome, detail: string, now: Date): Promise<RunRow | undefined> {
  return query.one(sql`update schedule_runs set outcome = ${outcome}, detail = ${detail}, finished_at = ${now} where id = ${id} returning *`, runRow);
}

/** Runs by the time each was for, newest first, `limit` after the cursor's (scheduled_for, id). */
export function scheduleRuns(query: SqlRunner, scheduleId: string, after: { scheduledFor: Date; id: string } | undefined, limit: number): Promise<RunRow[]> {
  const page = after ? sql`and (scheduled_for, id) < (${after.scheduledFor}, ${after.id})` : sql``;
  return query.rows(sql`select * from schedule_runs where schedule_id = ${scheduleId} ${page} order by scheduled_for desc, id desc limit ${limit}`, runRow);
}

/** Each schedule's latest run. */
export function latestRuns(query: SqlRunner, scheduleIds: string[]): Promise<RunRow[]> {
  if (!scheduleIds.length) return Promise.resolve([]);
  return query.rows(
    sql`select distinct on (schedule_id) * from schedule_runs where schedule_id = any(${scheduleIds}) order by schedule_id, scheduled_for desc, id desc`,
    runRow,
  );
}
