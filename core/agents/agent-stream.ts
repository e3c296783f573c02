/**
 * One agent's stream, from Hello to its end: presence in the database, the stream in this
 * instance's registry, the agent's messages handled in order (stream-messages.ts). It ends when
 * the agent closes it or goes away, stays silent past {@link silenceLimitMs}, or when core ends it
 * (key revoked, another stream took over, shutdown); the server goes offline as it ends.
 */
import { randomUUID } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import type { DescMessage, Message } from "@bufbuild/protobuf";
import { createWritableIterable } from "@connectrpc/connect/protocol";
import type { EntityManager } from "@mikro-orm/postgresql";
import { ConnectRequestSchema, type ConnectRequest } from "../../gen/outpost/agent/v1/agent_service_pb.js";
import type { AgentCaller } from "../context.ts";
import type { AgentConnection } from "./connections.ts";
import type { JobFailureLog } from "../log-throttle.ts";
import { markDisconnected, silenceLimitMs } from "./presence.ts";
import { createConnectionConsole } from "./console.ts";
import { createConnectionFiles } from "./connection-files.ts";
import { createConnectionLifecycle } from "./connection-lifecycle.ts";
import { createMessageHandler, type AgentStreamDeps, type Outgoing, type StreamSession } from "./stream-messages.ts";

export type { AgentStreamDeps } from "./stream-messages.ts";

export interface AgentStreamInput {
  agent: AgentCaller;
  /** The call's EntityManager; the stream uses it for plain SQL only, so it holds no entities. */
  em: EntityManager;
  requests: AsyncIterable<ConnectRequest>;
  /** Aborted when the agent goes away. */
  signal: AbortSignal;
  /** Checks each message against the contract's rules (streams skip the validate interceptor). */
  check: (desc: DescMessage, message: Message) => void;
  /** Logs a disconnect that could not be recorded: one for every stream, since an outage fails them all at once. */
  disconnectFailed: JobFailureLog;
}

/** The stream's connection, as the registry and the console see it, and the outbox its messages leave by. */
function openConnection(serverId: string) {
  const outbox = createWritableIterable<Outgoing>();
  const state: { ended: boolean; draining: boolean; failure?: unknown } = { ended: false, draining: false };
  let finish!: () => void;
  const send = (message: Outgoing["message"]) => {
    if (!state.ended) outbox.write({ message }).catch(() => {});
  };
  const connection: AgentConnection = {
    id: randomUUID(),
    serverId,
    holding: false,
    players: [],
    console: createConnectionConsole((message) => send(message)),
    files: createConnectionFiles((message) => send(message)),
    lifecycle: createConnectionLifecycle((message) => send(message)),
    end(error) {
      if (state.ended) return;
      state.ended = true;
      state.failure = error;
      // An ended stream holds nothing: it answers no live console's announcement meanwhile.
      connection.holding = false;
      outbox.close();
      // Commands waiting for this agent fail now, not at their timeout.
      connection.console.close();
      connection.files.close();
      connection.lifecycle.close();
    },
    // Replaced by runAgentStream, which knows the message under way.
    drain: (error) => connection.end(error),
    finished: new Promise<void>((resolve) => (finish = resolve)),
  };
  return { connection, outbox, state, send, finish: () => finish() };
}

/** Ends the connection once the agent has sent nothing for {@link silenceLimitMs}; `heard` starts the count again. */
function silenceWatch(connection: AgentConnection) {
  let silence: NodeJS.Timeout | undefined;
  return {
    heard() {
      // Every message the agent sends starts the same timer again.
      if (silence) return void silence.refresh();
      silence = setTimeout(() => connection.end(new ConnectError(`the agent sent nothing for ${silenceLimitMs / 1000} seconds`, Code.DeadlineExceeded)), silenceLimitMs);
    },
    stop: () => clearTimeout(silence),
  };
}

/** The stream ended: it holds nothing any more, and once `handling` is done, a server it held goes offline. */
async function endSession(deps: AgentStreamDeps, session: StreamSession, handling: Promise<void>, disconnectFailed: JobFailureLog): Promise<void> {
  session.detach?.();
  session.connection.console.close();
  session.connection.files.close();
  session.connection.lifecycle.close();
  await handling.catch(() => {});
  if (session.playerAuth === undefined) return;
  const serverId = session.agent.server.id;
  const wentOffline = await markDisconnected(deps.statements.on(session.em), serverId, session.connection.id, deps.clock.now()).catch((error) => {
    disconnectFailed(error, { serverId });
    return false;
  });
  if (wentOffline) deps.consoles.offline(serverId);
}

export async function* runAgentStream(deps: AgentStreamDeps, input: AgentStreamInput): AsyncGenerator<Outgoing> {
  const { agent, em, signal } = input;
  if (deps.agents.closing) throw new ConnectError("Outpost is shutting down; reconnect in a moment", Code.Unavailable);

  const { connection, outbox, state, send, finish } = openConnection(agent.server.id);
  const session: StreamSession = { agent, em, connection, send, ended: () => state.ended };
  const handle = createMessageHandler(deps, session);
  const silence = silenceWatch(connection);
  const goneAway = () => connection.end(undefined);
  signal.addEventListener("abort", goneAway, { once: true });
  deps.agents.track(connection);
  silence.heard();
  // Messages are handled one at a time, in order; `handling` is the one under way.
  let handling: Promise<void> = Promise.resolve();
  connection.drain = (error) => {
    state.draining = true;
    void handling.catch(() => {}).then(() => connection.end(error));
  };
  void (async () => {
    for await (const request of input.requests) {
      // A draining stream reads no more: what the agent sends now it asks again elsewhere.
      if (state.ended || state.draining) return;
      silence.heard();
      input.check(ConnectRequestSchema, request);
      await (handling = handle(request));
    }
    connection.end(undefined);
  })().catch((error) => connection.end(error));

  try {
    for await (const message of outbox) yield message;
    if (state.failure !== undefined) throw state.failure;
  } finally {
    silence.stop();
    signal.removeEventListener("abort", goneAway);
    state.ended = true;
    await endSession(deps, session, handling, input.disconnectFailed);
    finish();
  }
}
