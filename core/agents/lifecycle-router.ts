/**
 * Start, stop, restart and kill, as core asks them of an agent that runs its game server's
 * process: to the stream that holds the server, on whichever instance (stream-calls.ts); the
 * stream's own side is connection-lifecycle.ts. One router per process, built by the composition root.
 */
import type { Logger } from "pino";
import { GameState, LifecycleAction } from "../../gen/outpost/servers/v1/resources_pb.js";
import type { Bus } from "../bus.ts";
import type { AgentConnection, AgentConnections } from "./connections.ts";
import { createStreamCalls } from "./stream-calls.ts";
import { lifecycleTimeoutMs, type LifecycleAnswer, type LifecycleQuestion } from "./connection-lifecycle.ts";

const actions = new Set<unknown>([LifecycleAction.START, LifecycleAction.STOP, LifecycleAction.RESTART, LifecycleAction.KILL]);
const states = new Set<unknown>(Object.values(GameState).filter((v) => typeof v === "number"));

function readQuestion(value: unknown): LifecycleQuestion | undefined {
  const q = value as Partial<LifecycleQuestion> | null;
  return q && actions.has(q.action) && typeof q.reason === "string" ? { action: q.action!, reason: q.reason } : undefined;
}

function readAnswer(value: unknown): LifecycleAnswer | undefined {
  const a = value as Partial<LifecycleAnswer> | null;
  if (!a || typeof a.success !== "boolean" || typeof a.error !== "string" || !states.has(a.state)) return undefined;
  if (typeof a.detail !== "string" || typeof a.changed !== "boolean") return undefined;
  return { success: a.success, error: a.error, state: a.state!, detail: a.detail, changed: a.changed };
}

export interface LifecycleRouter {
  /** Asks the stream that holds the server (its row's `agent_connection_id`); rejects AgentUnanswered. */
  execute(connectionId: string, requestId: string, question: LifecycleQuestion): Promise<LifecycleAnswer>;
  /** The stream holds its server now: requests from other instances reach it, until the returned detach. */
  attach(connection: AgentConnection): () => void;
}

export function createLifecycleRouter(deps: { agents: AgentConnections; bus: Bus; logger: Logger }): LifecycleRouter {
  const calls = createStreamCalls(deps, {
    name: "lifecycle-request",
    ask: (connection, requestId, question: LifecycleQuestion, timeoutMs) => connection.lifecycle.run(requestId, question, timeoutMs),
    readQuestion,
    readAnswer,
  });
  return {
    execute: (connectionId, requestId, question) => calls.call(connectionId, requestId, question, lifecycleTimeoutMs),
    attach: (connection) => calls.attach(connection),
  };
}
