/**
 * What an agent reports of its console commands settles their records (console-command-queries.ts):
 * a ConsoleResult nobody waits for any more (it came after its caller was told outcome_unknown, or
 * the agent sent it again on a new connection) as ran or failed, and its ConsoleReceived — every
 * command of its run it got — the pending ones of that run it never got as not sent. Each record
 * settled so is a `server.console_command_settled` event, by the agent.
 */
import type { ConsoleReceived, ConsoleResult } from "../../gen/outpost/agent/v1/agent_service_pb.js";
import type { CoreDeps } from "../deps.ts";
import { answeredOutcome, settleCommand, settleNeverReceived } from "../servers/console-command-queries.ts";
import { recordConsoleCommand } from "../servers/console-methods.ts";

type SettleDeps = Pick<CoreDeps, "activity" | "clock" | "orm" | "statements">;

interface SettledServer {
  id: string;
  organizationId: string;
}

const settledAction = "server.console_command_settled";
const neverReceived = "the agent never received it (it reported every command of its run, and not this one)";

/** A ConsoleResult no call waits for: its pending record, if it is this server's, settled from it. */
export async function settleReported(deps: SettleDeps, server: SettledServer, result: ConsoleResult): Promise<void> {
  const query = deps.statements.on(deps.orm.em.fork());
  const outcome = answeredOutcome(result, deps.clock.now());
  const command = await settleCommand(query, server.id, result.requestId, outcome);
  if (command === undefined) return;
  await recordConsoleCommand(deps.activity, "agent", server, { requestId: result.requestId, command, outcome: outcome.status, error: outcome.error }, settledAction);
}

/**
 * The agent's ConsoleReceived: when it is of the run this stream's Hello named, the server's
 * pending records of that run sent on earlier streams and not among those it got are settled as
 * not sent (when it has forgotten some, only those sent after the oldest it remembers). The streams before this one have ended (the agent opens one at a time),
 * so nothing sent on them can still reach it.
 */
export async function settleNeverReceivedCommands(
  deps: SettleDeps,
  server: SettledServer,
  stream: { connectionId: string; bootId: string | undefined },
  report: ConsoleReceived,
): Promise<void> {
  if (!stream.bootId || report.bootId !== stream.bootId) return;
  const query = deps.statements.on(deps.orm.em.fork());
  const settled = await settleNeverReceived(query, {
    serverId: server.id,
    bootId: report.bootId,
    connectionId: stream.connectionId,
    received: report.requestIds,
    complete: report.complete,
    error: neverReceived,
    at: deps.clock.now(),
  });
  for (const s of settled) {
    await recordConsoleCommand(deps.activity, "agent", server, { requestId: s.request_id, command: s.command, outcome: "not_sent", error: neverReceived }, settledAction);
  }
}
