/**
 * servers/executeConsoleCommand: a command typed in the dashboard or sent through the API runs on
 * the game server's console through its agent's stream, and the lines that followed it come back.
 * Owners and admins may use any server's console; a member needs a live grant with the
 * console_command action, and each command sent to the agent spends one of its uses (one the
 * agent never got — offline, no console, its stream ending at that moment, or too many commands
 * waiting — spends none; one sent whose agent then goes silent does, as it may have run).
 *
 * What really happened is kept (console-command-queries.ts): a command is recorded as pending
 * before it is sent, and one that cannot be recorded is not sent (the database's error answers
 * the call, unavailable, and nothing ran). Its answer settles the record; an answer that cannot
 * be recorded still reaches the caller (it ran: a retry would run it again), and the record stays
 * pending. A command sent and not answered is `outcome_unknown`, never "offline" or "timeout" as
 * if it had not run, and its record stays pending; servers/getConsoleCommand reads it.
 *
 * Every call the caller was allowed to make is an activity event, refusals included, with its
 * outcome (`unknown` for one not answered); so is a member's refused by their grant (`denied`).
 */
import { randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import {
  ExecuteConsoleCommandResponseSchema,
  type ExecuteConsoleCommandRequest,
  type ExecuteConsoleCommandResponse,
} from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { entityManager, requireUser, serverScope, type UserCaller } from "../context.ts";
import type { CoreDeps } from "../deps.ts";
import { judgeServerRow, returnServerUse, spendServerUse } from "../access.ts";
import type { ServerAccessRow } from "../access-queries.ts";
import type { ActivityWriter } from "../activity/record.ts";
import type { Db } from "../db/sql.ts";
import { bool, nullable, row, text, timestamp } from "../db/rows.ts";
import { DomainError, fail, fieldFail } from "../errors.ts";
import { isOnline } from "../agents/presence.ts";
import { consoleTimeoutMs, type ConsoleAnswer } from "../agents/console.ts";
import { AgentUnanswered, unansweredRefusal } from "../agents/answer-waits.ts";
import { Server } from "../db/entities.ts";
import { answeredOutcome, recordPendingCommand, settleCommand, type SettledStatus } from "./console-command-queries.ts";
import { consoleCommandProblem } from "../../contract/console-command.ts";

export type ConsoleOutcome = "ok" | "failed" | "denied" | "frozen" | "offline" | "no_console" | "unknown" | "busy";

/** How an unanswered command is told (answer-waits.ts). */
const commandUnanswered = (requestId: string) => ({
  many: "console commands",
  unknown: `the command may have run; servers/getConsoleCommand with request_id ${requestId} tells once its outcome is known`,
});

/** Why a command did not run, or may have run unanswered, in the caller's words. */
function refusalOf(outcome: "offline" | "no_console" | "timeout" | "busy", sent: boolean, requestId: string): DomainError {
  if (outcome !== "no_console") return unansweredRefusal(outcome, sent, consoleTimeoutMs, commandUnanswered(requestId));
  return fail("no_console", "the server's agent cannot run console commands (it connected without a console; `outpost-agent wrap` and the flying-squid plugin have one)");
}

/**
 * The command as the console takes it: one leading "/" dropped. The contract refused control
 * characters, line separators and blanks already; checked again here, where it is written down.
 */
export function consoleCommandText(typed: string): string {
  const problem = consoleCommandProblem(typed);
  if (problem) throw fieldFail([{ field: "command", message: problem }]);
  const command = typed.startsWith("/") ? typed.slice(1) : typed;
  if (command.trim() === "") throw fieldFail([{ field: "command", message: "a command is needed after the /" }]);
  return command;
}

type ConsoleDeps = Pick<CoreDeps, "activity" | "clock" | "config" | "consoles" | "logger" | "statements">;

export async function executeConsoleCommand(deps: ConsoleDeps, req: ExecuteConsoleCommandRequest, ctx: HandlerContext): Promise<ExecuteConsoleCommandResponse> {
  const caller = requireUser(ctx);
  const command = consoleCommandText(req.command);
  const db = deps.statements.db(entityManager(ctx));
  const requestId = randomUUID();
  const use = { action: "console_command" as const, now: deps.clock.now(), plans: deps.config.plans };
  const onRecord = refusalsOnRecord(db, req.serverId, (server, outcome, error) =>
    recordConsoleCommand(deps.activity, caller, server, { requestId, command, outcome, error }),
  );
  const judged = await onRecord(() => judgeServerRow(db.query, caller, req, use, serverScope(ctx)));
  const server = agentServer(judged.row);
  const record = (outcome: ConsoleOutcome, error = "") => recordConsoleCommand(deps.activity, caller, server, { requestId, command, outcome, error });

  let outcome: ConsoleOutcome | "timeout" | undefined;
  if (!isOnline(server, use.now) || !server.agentConnectionId) outcome = "offline";
  else if (!server.agentConsole) outcome = "no_console";
  let answer: ConsoleAnswer | undefined;
  let sent = false;
  if (!outcome) {
    // On record before it is sent (and before a grant's use is spent on it): if this fails, the
    // call fails, nothing was spent and the command was never sent.
    await recordPendingCommand(db.query, {
      requestId,
      serverId: server.id,
      userId: caller.user.id,
      command,
      connectionId: server.agentConnectionId!,
      agentBootId: server.agentBootId,
      sentAt: deps.clock.now(),
    });
    try {
      await onRecord(() => spendServerUse(db.query, caller, judged, use));
    } catch (error) {
      // Refused by the grant (used up meanwhile): never sent.
      await settleCommand(db.query, server.id, requestId, { status: "not_sent", error: (error as Error).message, at: deps.clock.now() }).catch(() => {});
      throw error;
    }
    sent = true;
    try {
      answer = await deps.consoles.execute({ serverId: server.id, connectionId: server.agentConnectionId! }, requestId, command, consoleTimeoutMs);
    } catch (error) {
      if (!(error instanceof AgentUnanswered)) throw error;
      outcome = error.outcome;
      sent = error.sent;
      // Turned away before the agent got it (its stream just ended, or too many waiting): it cannot have run.
      if (!sent) {
        await returnServerUse(db.query, judged, use);
        await settleCommand(db.query, server.id, requestId, { status: "not_sent", error: refusalOf(outcome, false, requestId).message, at: deps.clock.now() });
      }
    }
  }
  if (!answer) {
    const refusal = refusalOf(outcome as Parameters<typeof refusalOf>[0], sent, requestId);
    // Sent and unanswered, the caller must hear "unknown" even if the log cannot take it now.
    if (!sent) await record(outcome as ConsoleOutcome, refusal.message);
    else
      await record("unknown", refusal.message).catch((error) =>
        deps.logger.warn({ err: error, requestId }, "an unanswered console command could not be put in the activity log"),
      );
    throw refusal;
  }
  const answered = answeredOutcome(answer, deps.clock.now());
  await settleAnswered(deps, db, { caller, server, requestId, command, outcome: answered });
  return create(ExecuteConsoleCommandResponseSchema, { requestId, success: answer.success, output: answer.output, error: answered.error });
}

/**
 * Settles an answered command's record and puts it in the activity log. The command ran (or the
 * agent refused it): when the database cannot take that now, the caller still gets the answer —
 * told to retry, they would run it again — and the record stays pending.
 */
async function settleAnswered(
  deps: ConsoleDeps,
  db: Db,
  c: { caller: UserCaller; server: AgentServer; requestId: string; command: string; outcome: ReturnType<typeof answeredOutcome> },
): Promise<void> {
  try {
    await settleCommand(db.query, c.server.id, c.requestId, c.outcome);
    await recordConsoleCommand(deps.activity, c.caller, c.server, {
      requestId: c.requestId,
      command: c.command,
      outcome: c.outcome.status === "ran" ? "ok" : "failed",
      error: c.outcome.error,
    });
  } catch (error) {
    deps.logger.warn(
      { err: error, requestId: c.requestId, serverId: c.server.id },
      "a console command was answered but its outcome could not be recorded; its record stays pending",
    );
  }
}

/** What a console command or a file operation reads of its server: where its agent is, and what it can do. */
export interface AgentServer {
  id: string;
  organizationId: string;
  online: boolean;
  lastSeenAt: Date | null;
  agentConnectionId: string | null;
  /** The run of the agent that last said Hello, when it named one. */
  agentBootId: string | null;
  agentConsole: boolean;
  /** The agent runs the server's process (start, stop, restart, kill). */
  agentLifecycle: boolean;
  /** "off" | "read-only" | "on": what the agent lets Outpost do with the server's files. */
  agentFiles: string;
}

/** The columns a command or file operation needs of judgeServerRow's `row_to_json(s)` (its times arrive as text). */
const agentServerRow = row({
  server: row({
    id: text,
    organization_id: text,
    online: bool,
    last_seen_at: nullable(timestamp),
    agent_connection_id: nullable(text),
    agent_boot_id: nullable(text),
    agent_console: bool,
    agent_lifecycle: bool,
    agent_files: text,
  }),
});

/** The server's columns a command or file operation needs, decoded from judgeServerRow's row; a row of another shape fails here, by column. */
export function agentServer(access: Pick<ServerAccessRow, "server">): AgentServer {
  const { server: s } = agentServerRow(access);
  return {
    id: s.id,
    organizationId: s.organization_id,
    online: s.online,
    lastSeenAt: s.last_seen_at,
    agentConnectionId: s.agent_connection_id,
    agentBootId: s.agent_boot_id,
    agentConsole: s.agent_console,
    agentLifecycle: s.agent_lifecycle,
    agentFiles: s.agent_files,
  };
}

/** The access refusals that are on record, with their outcome. */
const refusedOutcomes: Partial<Record<string, "denied" | "frozen">> = { permission_denied: "denied", server_frozen: "frozen" };

/**
 * Runs a step of the access check (judging, then spending the grant's use) and puts its refusal
 * on record with `record`: a member of the server's organization whose grant does not allow the
 * call (none, expired, used up — by a concurrent call too —, without the action) tried one
 * (`denied`), as did anyone on a frozen server (`frozen`, spending no use). For anyone else the
 * server does not exist, and nothing is recorded.
 */
export function refusalsOnRecord(
  db: Db,
  serverId: string,
  record: (server: Pick<AgentServer, "id" | "organizationId">, outcome: "denied" | "frozen", error: string) => Promise<void>,
) {
  return async <T>(step: () => Promise<T>): Promise<T> => {
    try {
      return await step();
    } catch (error) {
      const outcome = error instanceof DomainError ? refusedOutcomes[error.reason] : undefined;
      if (outcome) {
        const server = await db.em.findOne(Server, { id: serverId });
        if (server) await record({ id: server.id, organizationId: server.organization.id }, outcome, (error as DomainError).message);
      }
      throw error;
    }
  };
}

/**
 * The activity event of one console command, written at once (the call may still fail after it),
 * with other commands' events of the same moment: the caller's, or the agent's when its report
 * settles a command later (`server.console_command_settled`, outcome ran, failed or not_sent).
 */
export function recordConsoleCommand(
  activity: ActivityWriter,
  actor: Parameters<ActivityWriter["append"]>[0],
  server: Pick<AgentServer, "id" | "organizationId">,
  facts: { requestId: string; command: string; outcome: ConsoleOutcome | SettledStatus; error: string },
  action: "server.console_command" | "server.console_command_settled" = "server.console_command",
): Promise<void> {
  return activity.append(actor, {
    organizationId: server.organizationId,
    action,
    targetType: "server",
    targetId: server.id,
    serverId: server.id,
    details: { requestId: facts.requestId, command: facts.command, outcome: facts.outcome, ...(facts.error && { error: facts.error }) },
  });
}
