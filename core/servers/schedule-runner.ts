/**
 * Runs server schedules at their times: every instance looks for what is due every few seconds,
 * and takes each run (or warning) by moving the schedule on in PostgreSQL (schedule-queries.ts),
 * so that one instance does it however many are up. A run missed while no instance was up runs
 * once, late, within SCHEDULE_GRACE_SECONDS, and is skipped beyond it (schedule-rules.ts); both
 * are recorded. The action goes to the server's agent as a person's would (lifecycle-router.ts,
 * console-router.ts), in the name of the schedule: the activity log's actor is the system, with
 * the schedule in the details.
 */
import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import { LifecycleAction } from "../../gen/outpost/servers/v1/resources_pb.js";
import type { CoreDeps } from "../deps.ts";
import { inTransaction, sql, type SqlRunner } from "../db/sql.ts";
import { jobFailureLog, type JobFailureLog } from "../log-throttle.ts";
import { bool, nullable, row, text, timestamp } from "../db/rows.ts";
import { isOnline } from "../agents/presence.ts";
import { AgentUnanswered } from "../agents/answer-waits.ts";
import { consoleTimeoutMs } from "../agents/console.ts";
import { gameStateName } from "../agents/game-state.ts";
import { consoleText, dueWarning, settleDue, type ScheduleActionName } from "./schedule-rules.ts";
import { dueSchedules, finishRun, insertRun, takeDue, takeWarning, type RunOutcome, type RunRow, type ScheduleRow } from "./schedule-queries.ts";

export type ScheduleDeps = Pick<CoreDeps, "activity" | "clock" | "config" | "consoles" | "lifecycles" | "logger" | "orm" | "statements">;

/** A stored schedule's times as the rules read them. */
export const timesOf = (s: ScheduleRow) => ({ cron: s.cron, timeZone: s.time_zone });

/** How often each instance looks for due runs. */
export const scheduleTickMs = 5_000;
/** Schedules looked at per tick (the most overdue first). */
const perTick = 1_000;

const lifecycleOf: Partial<Record<ScheduleActionName, LifecycleAction>> = { restart: LifecycleAction.RESTART, stop: LifecycleAction.STOP, start: LifecycleAction.START };

const agentRow = row({ online: bool, last_seen_at: nullable(timestamp), agent_connection_id: nullable(text), agent_lifecycle: bool, agent_console: bool });

const query = (deps: ScheduleDeps): SqlRunner => deps.statements.on(deps.orm.em.fork());

/** The server's agent as its row says, when it is connected. */
async function connectedAgent(deps: ScheduleDeps, serverId: string) {
  const server = await query(deps).one(
    sql`select online, last_seen_at, agent_connection_id, agent_lifecycle, agent_console from servers where id = ${serverId}`,
    agentRow,
  );
  const online = server && isOnline({ online: server.online, lastSeenAt: server.last_seen_at }, deps.clock.now()) && server.agent_connection_id;
  return online ? server : undefined;
}

/** Does the schedule's action on its server now; resolves with how it went, never rejects for the agent's sake. */
export async function doScheduleAction(deps: ScheduleDeps, s: ScheduleRow, runId: string): Promise<{ outcome: RunOutcome; detail: string }> {
  const server = await connectedAgent(deps, s.server_id);
  if (!server?.agent_connection_id) return { outcome: "failed", detail: "the server's agent is offline" };
  const connectionId = server.agent_connection_id;
  try {
    const lifecycle = lifecycleOf[s.action];
    if (lifecycle) {
      if (!server.agent_lifecycle) return { outcome: "failed", detail: "the server's agent does not run the server's process (outpost-agent wrap does)" };
      const answer = await deps.lifecycles.execute(connectionId, runId, { action: lifecycle, reason: `schedule "${s.name}"` });
      if (!answer.success) return { outcome: "failed", detail: `the agent would not: ${answer.error}` };
      const state = gameStateName(answer.state) ?? "unknown";
      return { outcome: "ok", detail: answer.changed ? `${state}${answer.detail ? `: ${answer.detail}` : ""}` : `nothing to do: already ${state}` };
    }
    if (!server.agent_console) return { outcome: "failed", detail: "the server's agent has no console" };
    const command = s.action === "broadcast" ? `say ${s.text}` : consoleText(s.text);
    const answer = await deps.consoles.execute({ serverId: s.server_id, connectionId }, runId, command, consoleTimeoutMs);
    return answer.success ? { outcome: "ok", detail: answer.output.join("\n") } : { outcome: "failed", detail: answer.error };
  } catch (error) {
    if (!(error instanceof AgentUnanswered)) throw error;
    return { outcome: "failed", detail: error.sent ? "no answer from the server's agent: it may have been done" : "the server's agent is offline" };
  }
}

/** Records a run's end, and its activity event. */
async function recordRun(deps: ScheduleDeps, s: ScheduleRow, run: RunRow, actor: Actor = "system"): Promise<void> {
  await deps.activity.append(actor, {
    organizationId: s.organization_id,
    action: run.outcome === "skipped" ? "server.schedule_skipped" : "server.schedule_ran",
    targetType: "server",
    targetId: s.server_id,
    serverId: s.server_id,
    details: {
      scheduleId: s.id,
      schedule: s.name,
      action: s.action,
      runId: run.id,
      scheduledFor: run.scheduled_for.toISOString(),
      outcome: run.outcome,
      ...(run.manual && { manual: "true" }),
      ...(run.detail && { detail: run.detail.slice(0, 500) }),
    },
  });
}

/** Who a run's event names: the system for a run at its time, the person for one they started. */
type Actor = Parameters<ScheduleDeps["activity"]["append"]>[0];

/** Does the action of a run recorded as running, and records how it went. */
async function completeRun(deps: ScheduleDeps, s: ScheduleRow, started: RunRow, by?: Actor): Promise<RunRow> {
  const done = await doScheduleAction(deps, s, started.id).catch((error: Error) => ({ outcome: "failed" as const, detail: `Outpost failed: ${error.message}` }));
  const finished = (await finishRun(query(deps), started.id, done.outcome, done.detail.slice(0, 1000), deps.clock.now())) ?? started;
  await recordRun(deps, s, finished, by);
  return finished;
}

/** A run by hand, now, in the name of `by`: recorded as running, done, and recorded as it went. */
export async function runSchedule(deps: ScheduleDeps, s: ScheduleRow, by: Actor): Promise<RunRow | undefined> {
  const started = await insertRun(query(deps), {
    scheduleId: s.id,
    serverId: s.server_id,
    scheduledFor: deps.clock.now(),
    manual: true,
    outcome: "running",
    detail: "",
    now: deps.clock.now(),
  });
  return started && completeRun(deps, s, started, by);
}

/**
 * Takes the run due at `due`, in one transaction: moves the schedule on (the row as it is now is
 * what runs), records the times skipped and the run as running. Undefined when another instance
 * took it or the schedule changed.
 */
async function takeRun(deps: ScheduleDeps, s: ScheduleRow, due: Date, settled: ReturnType<typeof settleDue>, now: Date) {
  return deps.orm.em.fork().transactional(async (tx) => {
    const q = inTransaction(tx);
    const fresh = await takeDue(q, s.id, due, settled.next);
    if (!fresh) return undefined;
    const base = { scheduleId: s.id, serverId: s.server_id, manual: false, now };
    let skipped: RunRow | undefined;
    if (settled.skipped) {
      const { first, count } = settled.skipped;
      const later = count > 1 ? `, and ${count - 1 >= 999 ? "999 or more" : count - 1} later time${count > 2 ? "s" : ""}` : "";
      const detail = `missed: not run at ${first.toISOString()}${later} (no Outpost instance was up, or the server's agent stayed offline)`;
      skipped = await insertRun(q, { ...base, scheduledFor: first, outcome: "skipped", detail });
    }
    const started = settled.run && (await insertRun(q, { ...base, scheduledFor: settled.run, outcome: "running", detail: "" }));
    return { fresh, skipped, started };
  });
}

/** Runs still "running" this long after they started were left by an instance that stopped. */
const abandonedAfterMs = 10 * 60_000;

/** The warning's words, e.g. "Server restarting in 5 minutes". */
export function warningText(action: ScheduleActionName, minutes: number): string {
  return `say Server ${action === "restart" ? "restarting" : "stopping"} in ${minutes} minute${minutes === 1 ? "" : "s"}`;
}

/** One schedule's due run or warning, if this instance takes it. */
async function handle(deps: ScheduleDeps, s: ScheduleRow, now: Date): Promise<void> {
  const due = s.next_run_at!;
  if (due > now) {
    const minutes = dueWarning(s.warning_minutes, s.warned_minutes, due, now);
    if (minutes === undefined || !(await takeWarning(query(deps), s.id, due, minutes))) return;
    // A warning an instance comes to long after its time (none was up) would mislead: it is dropped.
    if (due.getTime() - now.getTime() < (minutes - 1) * 60_000) return;
    const server = await connectedAgent(deps, s.server_id);
    if (!server?.agent_connection_id) return;
    await deps.consoles
      .execute({ serverId: s.server_id, connectionId: server.agent_connection_id }, randomUUID(), warningText(s.action, minutes), consoleTimeoutMs)
      .catch((error) => deps.logger.warn({ err: error, scheduleId: s.id }, "a schedule's warning did not reach the server"));
    return;
  }
  const graceMs = deps.config.scheduleGraceSeconds * 1000;
  const settled = settleDue(timesOf(s), due, now, graceMs);
  // A run whose agent is not connected (yet: agents reconnect after an instance starts) waits for
  // it, up to the grace period; then it runs and fails, said so.
  if (now.getTime() - due.getTime() < graceMs && !(await connectedAgent(deps, s.server_id))) return;
  const taken = await takeRun(deps, s, due, settled, now);
  if (!taken) return;
  if (taken.skipped) await recordRun(deps, taken.fresh, taken.skipped);
  if (taken.started) await completeRun(deps, taken.fresh, taken.started);
}

/** One look for what is due, by this instance; each schedule's failure is logged (`failed`), not the others' end. */
export async function runDueSchedules(deps: ScheduleDeps, failed: JobFailureLog = jobFailureLog(deps.logger, "running a server schedule failed")): Promise<void> {
  const now = deps.clock.now();
  await query(deps).run(
    sql`update schedule_runs set outcome = 'failed', detail = 'the Outpost instance running it stopped before it ended: it may have been done', finished_at = ${now}
        where outcome = 'running' and started_at < ${new Date(now.getTime() - abandonedAfterMs)}`,
  );
  const due = await dueSchedules(query(deps), now, perTick);
  await Promise.all(due.map((s) => handle(deps, s, now).catch((error) => failed(error, { scheduleId: s.id }))));
}

/** Looks for due runs now and every `everyMs` (unref'd) until `stop`, which waits for the look under way. */
export function startScheduleRunner(deps: ScheduleDeps & { logger: Logger }, everyMs = scheduleTickMs): { stop(): Promise<void> } {
  let stopped = false;
  let busy = false;
  // While the database is away, each is one warning a minute (log-throttle.ts), not one a tick.
  const lookFailed = jobFailureLog(deps.logger, "looking for due server schedules failed");
  const runFailed = jobFailureLog(deps.logger, "running a server schedule failed");
  const look = () => {
    busy = true;
    return runDueSchedules(deps, runFailed)
      .catch(lookFailed)
      .finally(() => (busy = false));
  };
  // The first look is at once (a run missed while no instance was up is due now); a tick that
  // comes while a look is under way (a slow agent) is skipped, not queued.
  let running: Promise<void> = look();
  const tick = () => {
    if (!stopped && !busy) running = look();
  };
  const timer = setInterval(tick, everyMs).unref();
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
