/**
 * servers/startServer, stopServer, restartServer, killServer: the game server's process, through
 * an agent that runs it (`outpost-agent wrap`, whose Hello said `lifecycle`). The agent answers
 * once it has acted, with the game's state then; what follows (stopped, started again, running)
 * it reports as the game's state changes (core/agents/game-state.ts), each naming this call's
 * request id, so that the activity log says who and why for every change.
 *
 * Owners and admins may; a member needs a live grant with the lifecycle action, and each call
 * that reaches the agent spends one of its uses (one turned away before it reached the agent
 * spends none). Every call the caller was allowed to make is a `server.lifecycle` activity event
 * with its outcome, refusals included; so is a member's refused by their grant (`denied`).
 */
import { randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import {
  KillServerResponseSchema,
  RestartServerResponseSchema,
  StartServerResponseSchema,
  StopServerResponseSchema,
  type ServersService,
  type StartServerRequest,
} from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { LifecycleAction } from "../../gen/outpost/servers/v1/resources_pb.js";
import { entityManager, requireUser, serverScope, type UserCaller } from "../context.ts";
import type { CoreDeps } from "../deps.ts";
import { judgeServerRow, returnServerUse, spendServerUse } from "../access.ts";
import { fail } from "../errors.ts";
import { isOnline } from "../agents/presence.ts";
import { AgentUnanswered, unansweredRefusal } from "../agents/answer-waits.ts";
import { lifecycleTimeoutMs, type LifecycleAnswer } from "../agents/connection-lifecycle.ts";
import { gameStateName } from "../agents/game-state.ts";
import { agentServer, refusalsOnRecord, type AgentServer } from "./console-methods.ts";

type LifecycleDeps = Pick<CoreDeps, "activity" | "clock" | "config" | "lifecycles" | "logger" | "statements">;

/** The actions by their names in the activity log. */
const actionNames: Record<LifecycleAction, string> = {
  [LifecycleAction.UNSPECIFIED]: "unspecified",
  [LifecycleAction.START]: "start",
  [LifecycleAction.STOP]: "stop",
  [LifecycleAction.RESTART]: "restart",
  [LifecycleAction.KILL]: "kill",
};

export type LifecycleOutcome = "ok" | "unchanged" | "refused" | "denied" | "frozen" | "offline" | "no_lifecycle" | "unknown" | "busy";

/** What a lifecycle call was, for its activity event. */
interface LifecycleFacts {
  requestId: string;
  action: LifecycleAction;
  reason: string;
}

function recordLifecycle(
  deps: LifecycleDeps,
  caller: UserCaller,
  server: Pick<AgentServer, "id" | "organizationId">,
  facts: LifecycleFacts,
  outcome: { outcome: LifecycleOutcome; error?: string; answer?: LifecycleAnswer },
): Promise<void> {
  const { answer } = outcome;
  return deps.activity.append(caller, {
    organizationId: server.organizationId,
    action: "server.lifecycle",
    targetType: "server",
    targetId: server.id,
    serverId: server.id,
    details: {
      requestId: facts.requestId,
      action: actionNames[facts.action],
      ...(facts.reason && { reason: facts.reason }),
      outcome: outcome.outcome,
      ...(outcome.error && { error: outcome.error }),
      ...(answer && { state: gameStateName(answer.state) ?? "unknown", ...(answer.detail && { detail: answer.detail }) }),
    },
  });
}

/** Why the server's agent cannot take a lifecycle request now, if it cannot. */
function agentRefusal(server: AgentServer, now: Date) {
  if (!isOnline(server, now) || !server.agentConnectionId) return fail("agent_offline", "the server's agent is offline");
  if (!server.agentLifecycle) {
    return fail("no_lifecycle", "the server's agent does not run the server's process: start, stop, restart and kill need `outpost-agent wrap`");
  }
  return undefined;
}

const refusalOutcomes: Partial<Record<string, LifecycleOutcome>> = { agent_offline: "offline", no_lifecycle: "no_lifecycle", agent_refused: "refused" };

/** What the four requests share. */
type LifecycleCall = Pick<StartServerRequest, "serverId" | "reason" | "organizationId" | "organizationSlug">;

/** One lifecycle request as its procedure (and the assistant's restart_server) runs it. */
export async function runLifecycle(deps: LifecycleDeps, action: LifecycleAction, req: LifecycleCall, ctx: HandlerContext) {
  const caller = requireUser(ctx);
  const db = deps.statements.db(entityManager(ctx));
  const facts: LifecycleFacts = { requestId: randomUUID(), action, reason: req.reason.trim() };
  const use = { action: "lifecycle" as const, now: deps.clock.now(), plans: deps.config.plans };
  const onRecord = refusalsOnRecord(db, req.serverId, (server, outcome, error) => recordLifecycle(deps, caller, server, facts, { outcome, error }));
  const judged = await onRecord(() => judgeServerRow(db.query, caller, req, use, serverScope(ctx)));
  const server = agentServer(judged.row);
  const record = (outcome: LifecycleOutcome, more: { error?: string; answer?: LifecycleAnswer } = {}) =>
    recordLifecycle(deps, caller, server, facts, { outcome, ...more });
  // Once the agent was asked, its caller hears what came of it even if the log cannot take it now:
  // a failure here would be answered as the database being away, and a retry with the request's
  // idempotency key would then act again.
  const recordAfterAsking = (outcome: LifecycleOutcome, more: { error?: string; answer?: LifecycleAnswer }) =>
    record(outcome, more).catch((failure) =>
      deps.logger.warn({ err: failure, requestId: facts.requestId }, "a lifecycle request the agent was asked could not be put in the activity log"),
    );
  const cannot = agentRefusal(server, use.now);
  if (cannot) {
    await record(refusalOutcomes[cannot.reason]!, { error: cannot.message });
    throw cannot;
  }
  await onRecord(() => spendServerUse(db.query, caller, judged, use));
  const words = `${caller.user.email}${facts.reason ? `: ${facts.reason}` : ""}`;
  let answer: LifecycleAnswer;
  try {
    answer = await deps.lifecycles.execute(server.agentConnectionId!, facts.requestId, { action: facts.action, reason: words });
    if (!answer.success) throw fail("agent_refused", `the server's agent would not: ${answer.error}`);
  } catch (error) {
    const unanswered = error instanceof AgentUnanswered ? error : undefined;
    // Only a request that never reached the agent gives the use back; one it refused reached it.
    if (unanswered && !unanswered.sent) await returnServerUse(db.query, judged, use);
    const refusal = unanswered
      ? unansweredRefusal(unanswered.outcome, unanswered.sent, lifecycleTimeoutMs, {
          many: "lifecycle requests",
          unknown: "it may have been done; the server's gameState (servers/getServer) tells",
        })
      : error;
    const outcome = unanswered
      ? unanswered.outcome === "busy"
        ? "busy"
        : unanswered.sent
          ? "unknown"
          : "offline"
      : refusalOutcomes[(error as { reason?: string }).reason ?? ""];
    if (!outcome) throw error;
    await recordAfterAsking(outcome, { error: (refusal as Error).message });
    throw refusal;
  }
  await recordAfterAsking(answer.changed ? "ok" : "unchanged", { answer });
  return { requestId: facts.requestId, gameState: answer.state, gameStateDetail: answer.detail, changed: answer.changed };
}

/** One procedure per action: the same call, answered in its own response message. */
export function lifecycleMethods(deps: LifecycleDeps): Pick<ServiceImpl<typeof ServersService>, "startServer" | "stopServer" | "restartServer" | "killServer"> {
  return {
    startServer: async (req, ctx) => create(StartServerResponseSchema, await runLifecycle(deps, LifecycleAction.START, req, ctx)),
    stopServer: async (req, ctx) => create(StopServerResponseSchema, await runLifecycle(deps, LifecycleAction.STOP, req, ctx)),
    restartServer: async (req, ctx) => create(RestartServerResponseSchema, await runLifecycle(deps, LifecycleAction.RESTART, req, ctx)),
    killServer: async (req, ctx) => create(KillServerResponseSchema, await runLifecycle(deps, LifecycleAction.KILL, req, ctx)),
  };
}
