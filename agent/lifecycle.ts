/**
 * Outpost's start, stop, restart and kill (LifecycleRequest), for an agent that runs its game
 * server's process: handed to the agent's lifecycle handler (`wrap`'s is wrap-lifecycle.ts), and
 * its outcome sent back as the LifecycleResult once it has acted. An agent without a handler says
 * so in Hello, and Outpost sends it none; one that comes anyway is answered with a refusal.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ConnectRequestSchema, LifecycleRequest } from "../gen/outpost/agent/v1/agent_service_pb.js";
import { GameState, LifecycleAction } from "../gen/outpost/servers/v1/resources_pb.js";
import { visibleLine } from "../contract/one-line.ts";

export { LifecycleAction };

/** What the handler did: the game's state now, how, and whether anything changed. */
export interface LifecycleOutcome {
  state: GameState;
  detail: string;
  changed: boolean;
}

/**
 * Acts on Outpost's request and resolves once it has (the process spawned, `stop` written, a
 * killed process ended); rejects with an Error whose message says why it would not act.
 */
export type LifecycleHandler = (action: LifecycleAction, request: { requestId: string; reason: string }) => Promise<LifecycleOutcome>;

type Send = (message: MessageInitShape<typeof ConnectRequestSchema>["message"]) => void;

/** The contract's limits on a LifecycleResult. */
const limits = { errorChars: 1000, detailChars: 200 } as const;

/** A detail as the contract takes it: one line of at most 200 characters. */
export function stateDetail(detail: string): string {
  const line = visibleLine(detail);
  return line.length > limits.detailChars ? `${line.slice(0, limits.detailChars - 1)}…` : line;
}

export async function answerLifecycleRequest(handler: LifecycleHandler | undefined, request: LifecycleRequest, send: Send): Promise<void> {
  const { requestId, action } = request;
  const refuse = (error: string) =>
    send({ case: "lifecycleResult", value: { requestId, success: false, error: error.slice(0, limits.errorChars), state: GameState.UNSPECIFIED } });
  if (!handler) return refuse("this agent does not run the game server's process");
  if (![LifecycleAction.START, LifecycleAction.STOP, LifecycleAction.RESTART, LifecycleAction.KILL].includes(action)) {
    return refuse("this agent does not know that action");
  }
  try {
    const outcome = await handler(action, { requestId, reason: visibleLine(request.reason) });
    send({ case: "lifecycleResult", value: { requestId, success: true, state: outcome.state, detail: stateDetail(outcome.detail), changed: outcome.changed } });
  } catch (error) {
    refuse((error as Error).message || "the agent could not act");
  }
}
