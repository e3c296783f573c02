/**
 * servers/listSchedules, createSchedule, updateSchedule, deleteSchedule, runScheduleNow and
 * listScheduleRuns: a server's schedules, for its organization's owners and admins (a member,
 * granted or not, is refused; outside the organization the server does not exist). Each change is
 * an activity event by the caller; runs are the runner's (schedule-runner.ts).
 */
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  CreateScheduleResponseSchema,
  DeleteScheduleResponseSchema,
  ListScheduleRunsResponseSchema,
  ListSchedulesResponseSchema,
  RunScheduleNowResponseSchema,
  ScheduleAction,
  ScheduleRunOutcome,
  ScheduleRunSchema,
  ScheduleSchema,
  UpdateScheduleResponseSchema,
  type Schedule,
  type ScheduleRun,
  type ServersService,
} from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { entityManager, requireUser, type UserCaller } from "../context.ts";
import type { Db } from "../db/sql.ts";
import { requireServerManager } from "../access.ts";
import { fail } from "../errors.ts";
import { decodeCursor, pageOf } from "../page-cursor.ts";
import { checkTerms, nextRun, nextRuns, type ScheduleActionName, type ScheduleTerms } from "./schedule-rules.ts";
import {
  deleteSchedule,
  findSchedule,
  insertSchedule,
  latestRuns,
  scheduleRuns,
  serverSchedules,
  updateSchedule,
  type RunOutcome,
  type RunRow,
  type ScheduleRow,
} from "./schedule-queries.ts";
import { runSchedule, timesOf, type ScheduleDeps } from "./schedule-runner.ts";

type ServersImpl = ServiceImpl<typeof ServersService>;

/** The most schedules one server has: each is looked at every few seconds by every instance. */
export const maxSchedulesPerServer = 20;

const actionNames: Record<ScheduleActionName, ScheduleAction> = {
  restart: ScheduleAction.RESTART,
  stop: ScheduleAction.STOP,
  start: ScheduleAction.START,
  command: ScheduleAction.COMMAND,
  broadcast: ScheduleAction.BROADCAST,
};
const actionOf = new Map(Object.entries(actionNames).map(([name, action]) => [action, name as ScheduleActionName]));
const outcomes: Record<RunOutcome, ScheduleRunOutcome> = {
  running: ScheduleRunOutcome.RUNNING,
  ok: ScheduleRunOutcome.OK,
  failed: ScheduleRunOutcome.FAILED,
  skipped: ScheduleRunOutcome.SKIPPED,
};

export function runToProto(r: RunRow): ScheduleRun {
  return create(ScheduleRunSchema, {
    id: r.id,
    scheduleId: r.schedule_id,
    scheduledFor: timestampFromDate(r.scheduled_for),
    startedAt: timestampFromDate(r.started_at),
    finishedAt: r.finished_at ? timestampFromDate(r.finished_at) : undefined,
    outcome: outcomes[r.outcome],
    detail: r.detail,
    manual: r.manual,
  });
}

function scheduleToProto(s: ScheduleRow, now: Date, lastRun?: RunRow): Schedule {
  return create(ScheduleSchema, {
    id: s.id,
    serverId: s.server_id,
    name: s.name,
    cron: s.cron,
    timeZone: s.time_zone,
    action: actionNames[s.action],
    text: s.text,
    warningMinutes: s.warning_minutes,
    enabled: s.enabled,
    // The time due (possibly a moment past, until an instance takes it), then those after it.
    nextRuns: s.enabled && s.next_run_at ? [s.next_run_at, ...nextRuns(timesOf(s), s.next_run_at > now ? s.next_run_at : now, 4)].map((d) => timestampFromDate(d)) : [],
    createdAt: timestampFromDate(s.created_at),
    updatedAt: timestampFromDate(s.updated_at),
    lastRun: lastRun ? runToProto(lastRun) : undefined,
  });
}

/** The request's terms, checked (invalid_argument with each problem). */
function termsOf(req: { name: string; cron: string; timeZone: string; action: ScheduleAction; text: string; warningMinutes: number[]; enabled: boolean }): ScheduleTerms {
  return checkTerms({ ...req, action: actionOf.get(req.action)! });
}

/** The schedule, for a manager of its server's organization; not_found when the caller cannot see it. */
async function managedSchedule(db: Db, caller: UserCaller, scheduleId: string): Promise<ScheduleRow> {
  const found = await findSchedule(db.query, scheduleId);
  if (!found) throw fail("not_found", "no such schedule");
  await requireServerManager(db, caller, { serverId: found.server_id });
  return found;
}

function recordChange(deps: ScheduleDeps, caller: UserCaller, s: ScheduleRow, action: "server.schedule_created" | "server.schedule_updated" | "server.schedule_deleted") {
  return deps.activity.append(caller, {
    organizationId: s.organization_id,
    action,
    targetType: "server",
    targetId: s.server_id,
    serverId: s.server_id,
    details: { scheduleId: s.id, name: s.name, cron: s.cron, timeZone: s.time_zone, action: s.action, enabled: String(s.enabled) },
  });
}

export function scheduleMethods(
  deps: ScheduleDeps,
): Pick<ServersImpl, "listSchedules" | "createSchedule" | "updateSchedule" | "deleteSchedule" | "runScheduleNow" | "listScheduleRuns"> {
  const dbOf = (ctx: Parameters<ServersImpl["listSchedules"]>[1]) => deps.statements.db(entityManager(ctx));
  return {
    async listSchedules(req, ctx) {
      const db = dbOf(ctx);
      await requireServerManager(db, requireUser(ctx), req);
      const schedules = await serverSchedules(db.query, req.serverId);
      const last = new Map(
        (
          await latestRuns(
            db.query,
            schedules.map((s) => s.id),
          )
        ).map((r) => [r.schedule_id, r]),
      );
      const now = deps.clock.now();
      return create(ListSchedulesResponseSchema, { schedules: schedules.map((s) => scheduleToProto(s, now, last.get(s.id))) });
    },
    async createSchedule(req, ctx) {
      const caller = requireUser(ctx);
      const db = dbOf(ctx);
      const access = await requireServerManager(db, caller, req);
      const terms = termsOf(req);
      if ((await serverSchedules(db.query, req.serverId)).length >= maxSchedulesPerServer) {
        throw fail("failed_precondition", `a server has at most ${maxSchedulesPerServer} schedules; delete one first`);
      }
      const now = deps.clock.now();
      const created = (await insertSchedule(db.query, {
        organizationId: access.organization.id,
        serverId: req.serverId,
        terms,
        nextRunAt: terms.enabled ? nextRun(terms, now) : null,
        now,
      }))!;
      await recordChange(deps, caller, created, "server.schedule_created");
      return create(CreateScheduleResponseSchema, { schedule: scheduleToProto(created, now) });
    },
    async updateSchedule(req, ctx) {
      const caller = requireUser(ctx);
      const db = dbOf(ctx);
      const found = await managedSchedule(db, caller, req.scheduleId);
      const terms = termsOf(req);
      const now = deps.clock.now();
      const updated = await updateSchedule(db.query, found.id, terms, terms.enabled ? nextRun(terms, now) : null, now);
      if (!updated) throw fail("not_found", "no such schedule");
      await recordChange(deps, caller, updated, "server.schedule_updated");
      return create(UpdateScheduleResponseSchema, { schedule: scheduleToProto(updated, now) });
    },
    async deleteSchedule(req, ctx) {
      const caller = requireUser(ctx);
      const db = dbOf(ctx);
      const found = await managedSchedule(db, caller, req.scheduleId);
      await deleteSchedule(db.query, found.id);
      await recordChange(deps, caller, found, "server.schedule_deleted");
      return create(DeleteScheduleResponseSchema, {});
    },
    async runScheduleNow(req, ctx) {
      const caller = requireUser(ctx);
      const found = await managedSchedule(dbOf(ctx), caller, req.scheduleId);
      const run = await runSchedule(deps, found, caller);
      return create(RunScheduleNowResponseSchema, { run: run ? runToProto(run) : undefined });
    },
    async listScheduleRuns(req, ctx) {
      const db = dbOf(ctx);
      const found = await managedSchedule(db, requireUser(ctx), req.scheduleId);
      const cursor = req.cursor ? decodeCursor(req.cursor) : undefined;
      const rows = await scheduleRuns(db.query, found.id, cursor && { scheduledFor: cursor.createdAt, id: cursor.id }, 101);
      const { page, nextCursor } = pageOf(
        rows.map((r) => ({ ...r, created_at: r.scheduled_for })),
        100,
      );
      return create(ListScheduleRunsResponseSchema, { runs: page.map(runToProto), nextCursor });
    },
  };
}
