/**
 * One agent's stream, from Hello to its end: presence in the database, the stream in this
 * instance's registry, in-game commands answered in order. It ends when the agent closes it or
 * goes away, stays silent past {@link silenceLimitMs}, or when core ends it (key revoked, another
 * stream took over, shutdown); the server goes offline as it ends.
 */
import { randomUUID } from "node:crypto";
import { Code, ConnectError } from "@connectrpc/connect";
import type { DescMessage, Message, MessageInitShape } from "@bufbuild/protobuf";
import { createWritableIterable } from "@connectrpc/connect/protocol";
import type { EntityManager } from "@mikro-orm/postgresql";
import {
  ConfirmCommand_Decision,
  ConnectRequestSchema,
  type ConnectRequest,
  type ConnectResponseSchema,
} from "../../gen/outpost/agent/v1/agent_service_pb.js";
import { PlayerAuth } from "../../gen/outpost/servers/v1/resources_pb.js";
import { playerAuthModes } from "../convert.ts";
import type { AgentCaller } from "../context.ts";
import type { CoreDeps } from "../deps.ts";
import { fail } from "../errors.ts";
import { gameFromProto } from "../convert.ts";
import { supersededError, type AgentConnection } from "./connections.ts";
import { heartbeatSeconds, markAlive, markConnected, markDisconnected, silenceLimitMs } from "./presence.ts";
import { distinctPlayers, replacePlayers } from "./players.ts";
import { createConnectionConsole } from "./console.ts";
import { answerConfirmCommand, answerLoginCommand } from "./answer-login.ts";

type Outgoing = MessageInitShape<typeof ConnectResponseSchema>;
type Incoming<C extends ConnectRequest["message"]["case"]> = Extract<ConnectRequest["message"], { case: C }>["value"];

export type AgentStreamDeps = Pick<CoreDeps, "clock" | "logger" | "agents" | "consoles" | "rateLimits" | "loginVerifier" | "config">;

const playerAuthNames: Partial<Record<PlayerAuth, string>> = Object.fromEntries(
  Object.entries(playerAuthModes).map(([name, mode]) => [mode, name]),
);

const revoked = () => fail("unauthenticated", "the agent key no longer works: it was regenerated, or the server was deleted");

export interface AgentStreamInput {
  agent: AgentCaller;
  /** The call's EntityManager; the stream uses it for plain SQL only, so it holds no entities. */
  em: EntityManager;
  requests: AsyncIterable<ConnectRequest>;
  /** Aborted when the agent goes away. */
  signal: AbortSignal;
  /** Checks each message against the contract's rules (streams skip the validate interceptor). */
  check: (desc: DescMessage, message: Message) => void;
}

export async function* runAgentStream(deps: AgentStreamDeps, input: AgentStreamInput): AsyncGenerator<Outgoing> {
  const { agent, em, signal } = input;
  const { server } = agent;
  if (deps.agents.closing) throw new ConnectError("Outpost is shutting down; reconnect in a moment", Code.Unavailable);

  const outbox = createWritableIterable<Outgoing>();
  let failure: unknown;
  let ended = false;
  let finish!: () => void;
  const connection: AgentConnection = {
    id: randomUUID(),
    serverId: server.id,
    holding: false,
    players: [],
    console: createConnectionConsole((message) => send(message)),
    end(error) {
      if (ended) return;
      ended = true;
      failure = error;
      // An ended stream holds nothing: it answers no live console's announcement meanwhile.
      connection.holding = false;
      outbox.close();
      // Commands waiting for this agent fail now, not at their timeout.
      connection.console.close();
    },
    finished: new Promise<void>((resolve) => (finish = resolve)),
  };
  const send = (message: Outgoing["message"]) => {
    if (!ended) outbox.write({ message }).catch(() => {});
  };
  let playerAuth: string | undefined;
  // Set while the stream holds its server: console commands from other instances reach it.
  let detach: (() => void) | undefined;

  async function handle(request: ConnectRequest): Promise<void> {
    const { message } = request;
    if (message.case === "hello") return hello(message.value);
    if (playerAuth === undefined) throw fail("failed_precondition", "send Hello first");
    switch (message.case) {
      case "players":
        connection.players = distinctPlayers(message.value.players);
        await replacePlayers(em, server.id, connection.id, connection.players, deps.clock.now());
        return;
      case "heartbeat": {
        const state = await markAlive(em, agent, connection.id, deps.clock.now());
        if (state === "revoked") throw revoked();
        if (state === "superseded") throw supersededError();
        return send({ case: "ping", value: {} });
      }
      case "loginCommand": {
        const { requestId, playerUuid, playerName, text } = message.value;
        const player = { uuid: playerUuid.toLowerCase(), name: playerName };
        const verdict = await answerLoginCommand(deps, { server, playerAuth, player, text, agentKeyHash: agent.keyHash });
        return send({ case: "loginReply", value: { requestId, ...verdict } });
      }
      case "consoleResult":
        return connection.console.answered(message.value);
      case "consoleOutput":
        connection.console.printed(message.value);
        return deps.consoles.printed(server.id, message.value.lines, message.value.dropped);
      case "confirmCommand": {
        const { requestId, playerUuid, playerName, decision } = message.value;
        const player = { uuid: playerUuid.toLowerCase(), name: playerName };
        const answer = decision === ConfirmCommand_Decision.CONFIRM ? "confirm" : "cancel";
        const verdict = await answerConfirmCommand(deps, { server, playerAuth, player, agentKeyHash: agent.keyHash }, answer);
        return send({ case: "loginReply", value: { requestId, ...verdict } });
      }
    }
  }

  async function hello(value: Incoming<"hello">): Promise<void> {
    if (playerAuth !== undefined) throw fail("failed_precondition", "Hello was already sent on this stream");
    const game = gameFromProto(value.game);
    if (game !== server.game) {
      throw fail("failed_precondition", `the agent reports a ${game} server, but "${server.name}" is a ${server.game} server in Outpost`);
    }
    const auth = playerAuthNames[value.playerAuth]!;
    const facts = { playerAuth: auth, agentVersion: value.agentVersion, console: value.console };
    if (!(await markConnected(em, agent, connection.id, facts, deps.clock.now()))) throw revoked();
    playerAuth = auth;
    deps.agents.hold(connection);
    detach = deps.consoles.attach(connection);
    send({
      case: "welcome",
      value: { serverId: server.id, serverName: server.name, organizationSlug: server.organizationSlug, heartbeatSeconds },
    });
  }

  let silence: NodeJS.Timeout | undefined;
  const heard = () => {
    clearTimeout(silence);
    silence = setTimeout(
      () => connection.end(new ConnectError(`the agent sent nothing for ${silenceLimitMs / 1000} seconds`, Code.DeadlineExceeded)),
      silenceLimitMs,
    );
  };
  const goneAway = () => connection.end(undefined);
  signal.addEventListener("abort", goneAway, { once: true });
  deps.agents.track(connection);
  heard();
  // Messages are handled one at a time, in order; `handling` is the one under way.
  let handling: Promise<void> = Promise.resolve();
  void (async () => {
    for await (const request of input.requests) {
      if (ended) return;
      heard();
      input.check(ConnectRequestSchema, request);
      await (handling = handle(request));
    }
    connection.end(undefined);
  })().catch((error) => connection.end(error));

  try {
    for await (const message of outbox) yield message;
    if (failure !== undefined) throw failure;
  } finally {
    clearTimeout(silence);
    signal.removeEventListener("abort", goneAway);
    ended = true;
    detach?.();
    connection.console.close();
    await handling.catch(() => {});
    if (playerAuth !== undefined) {
      const wentOffline = await markDisconnected(em, server.id, connection.id, deps.clock.now()).catch((error) => {
        deps.logger.error({ err: error, serverId: server.id }, "recording an agent's disconnect failed");
        return false;
      });
      if (wentOffline) deps.consoles.offline(server.id);
    }
    finish();
  }
}
