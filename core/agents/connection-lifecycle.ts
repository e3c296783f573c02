/**
 * One agent stream's side of start, stop, restart and kill: each sent as a LifecycleRequest and
 * waiting for its LifecycleResult by request id (answer-waits.ts); lifecycle-router.ts decides
 * which stream, agent-stream.ts makes one per stream.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ConnectResponseSchema, LifecycleResult } from "../../gen/outpost/agent/v1/agent_service_pb.js";
import type { GameState, LifecycleAction } from "../../gen/outpost/servers/v1/resources_pb.js";
import { createAnswerWaits } from "./answer-waits.ts";

/**
 * How long a lifecycle request waits for the agent's answer: it answers once it has acted (a
 * start spawned, `stop` written, a kill's process ended), which takes moments.
 */
export const lifecycleTimeoutMs = 15_000;

/** Lifecycle requests that may wait for one agent at once; past it, one is refused (busy). */
const maxWaiting = 8;

/** What core asks: the action, and who and why in words for the agent's operator. */
export interface LifecycleQuestion {
  action: LifecycleAction;
  reason: string;
}

/** What the agent did. */
export interface LifecycleAnswer {
  success: boolean;
  error: string;
  state: GameState;
  detail: string;
  changed: boolean;
}

export interface ConnectionLifecycle {
  /** Sends the request and resolves with its LifecycleResult; rejects AgentUnanswered (answer-waits.ts). */
  run(requestId: string, question: LifecycleQuestion, timeoutMs: number): Promise<LifecycleAnswer>;
  /** A LifecycleResult arrived: answers its request; one nobody waits for is ignored. */
  answered(result: LifecycleResult): void;
  /** The stream ended: every waiting request fails with "offline", and so does any later one. */
  close(): void;
}

export function createConnectionLifecycle(send: (message: MessageInitShape<typeof ConnectResponseSchema>["message"]) => void): ConnectionLifecycle {
  const waits = createAnswerWaits<LifecycleAnswer>(maxWaiting);
  return {
    run: (requestId, { action, reason }, timeoutMs) => waits.ask(requestId, timeoutMs, () => send({ case: "lifecycleRequest", value: { requestId, action, reason } })),
    answered: ({ requestId, success, error, state, detail, changed }) => void waits.answer(requestId, { success, error, state, detail, changed }),
    close: () => waits.close(),
  };
}
