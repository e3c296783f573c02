/**
 * What an agent's stream does with each message the agent sends, one at a time and in order
 * (agent-stream.ts reads them): Hello first, which makes the stream hold its server, then players,
 * heartbeats, in-game commands to answer, and the console's results and output.
 */
import { gameStateChanged } from "./game-state.ts";
import { settleNeverReceivedCommands, settleReported } from "./console-settle.ts";
import type { EntityManager } from "@mikro-orm/postgresql";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { ConfirmCommand_Decision, type ConnectRequest, type ConnectResponseSchema } from "../../gen/outpost/agent/v1/agent_service_pb.js";
import { PlayerAuth } from "../../gen/outpost/servers/v1/resources_pb.js";
import { filesModeName, gameFromProto, playerAuthModes } from "../convert.ts";
import type { AgentCaller } from "../context.ts";
import type { CoreDeps } from "../deps.ts";
import { fail } from "../errors.ts";
import { supersededError, type AgentConnection } from "./connections.ts";
import { beatState, heartbeatSeconds, markConnected } from "./presence.ts";
import { distinctPlayers, replacePlayers } from "./players.ts";
import { storeMemoryLimit } from "./agent-queries.ts";
import { answerConfirmCommand, answerLoginCommand } from "./answer-login.ts";
import { frozenError, requireNotFrozen, serverFreeze } from "../servers/frozen.ts";

export type Outgoing = MessageInitShape<typeof ConnectResponseSchema>;
type Incoming<C extends ConnectRequest["message"]["case"]> = Extract<ConnectRequest["message"], { case: C }>["value"];

export type AgentStreamDeps = Pick<
  CoreDeps,
  | "clock"
  | "logger"
  | "agents"
  | "consoles"
  | "files"
  | "lifecycles"
  | "stats"
  | "heartbeats"
  | "rateLimits"
  | "loginVerifier"
  | "config"
  | "metrics"
  | "statements"
  | "orm"
  | "activity"
>;

/** What the handlers share with the stream that reads the messages. */
export interface StreamSession {
  agent: AgentCaller;
  /** The call's EntityManager; the stream uses it for plain SQL only, so it holds no entities. */
  em: EntityManager;
  connection: AgentConnection;
  /** Sends a message to the agent (nothing once the stream ended). */
  send(message: Outgoing["message"]): void;
  /** Whether the stream has ended (a message's handling may outlast it). */
  ended(): boolean;
  /** The agent's player authentication, set by Hello. */
  playerAuth?: string;
  /** The agent's run, as its Hello named it. */
  bootId?: string;
  /** Set while the stream holds its server: console commands and file operations from other instances reach it. */
  detach?: () => void;
}

const playerAuthNames: Partial<Record<PlayerAuth, string>> = Object.fromEntries(Object.entries(playerAuthModes).map(([name, mode]) => [mode, name]));

export const revoked = () => fail("unauthenticated", "the agent key no longer works: it was regenerated, or the server was deleted");

/** Hello: the agent's facts on record, and the stream holds its server. */
async function hello(deps: AgentStreamDeps, session: StreamSession, value: Incoming<"hello">): Promise<void> {
  const { agent, connection } = session;
  const { server } = agent;
  if (session.playerAuth !== undefined) throw fail("failed_precondition", "Hello was already sent on this stream");
  const game = gameFromProto(value.game);
  if (game !== server.game) {
    throw fail("failed_precondition", `the agent reports a ${game} server, but "${server.name}" is a ${server.game} server in Outpost`);
  }
  // A frozen server's agent is refused, with why: the server stays offline until it is unfrozen.
  requireNotFrozen(await serverFreeze(deps.statements.on(session.em), deps.config, server.id));
  const auth = playerAuthNames[value.playerAuth]!;
  const facts = {
    playerAuth: auth,
    agentVersion: value.agentVersion,
    console: value.console,
    files: filesModeName(value.files),
    lifecycle: value.lifecycle,
    bootId: value.bootId ?? null,
  };
  if (!(await markConnected(session.em, agent, connection.id, facts, deps.clock.now()))) throw revoked();
  session.playerAuth = auth;
  session.bootId = value.bootId;
  // Ended meanwhile: it records its end (Hello is on record), but must not hold the server now,
  // which would end a newer stream and attach to the consoles after its detach ran.
  if (session.ended()) return;
  deps.agents.hold(connection);
  const detachConsole = deps.consoles.attach(connection);
  const detachFiles = deps.files.attach(connection);
  const detachLifecycle = deps.lifecycles.attach(connection);
  session.detach = () => {
    detachConsole();
    detachFiles();
    detachLifecycle();
  };
  session.send({
    case: "welcome",
    value: { serverId: server.id, serverName: server.name, organizationSlug: server.organizationSlug, heartbeatSeconds },
  });
}

async function heartbeat(deps: AgentStreamDeps, session: StreamSession): Promise<void> {
  const state = beatState(deps.config, await deps.heartbeats.beat(session.agent, session.connection.id));
  if (state === "revoked") throw revoked();
  if (state === "superseded") throw supersededError();
  if (state !== "ok") throw frozenError(state);
  session.send({ case: "ping", value: {} });
}

/** An in-game `/outpost` command, or a player's answer to its confirmation: the verdict goes back as a LoginReply. */
async function loginCommand(deps: AgentStreamDeps, session: StreamSession, playerAuth: string, message: ConnectRequest["message"]): Promise<void> {
  const { server, keyHash: agentKeyHash } = session.agent;
  if (message.case === "loginCommand") {
    const { requestId, playerUuid, playerName, text } = message.value;
    const player = { uuid: playerUuid.toLowerCase(), name: playerName };
    const verdict = await answerLoginCommand(deps, { server, playerAuth, player, text, agentKeyHash });
    return session.send({ case: "loginReply", value: { requestId, ...verdict } });
  }
  if (message.case === "confirmCommand") {
    const { requestId, playerUuid, playerName, decision } = message.value;
    const player = { uuid: playerUuid.toLowerCase(), name: playerName };
    const answer = decision === ConfirmCommand_Decision.CONFIRM ? "confirm" : "cancel";
    const verdict = await answerConfirmCommand(deps, { server, playerAuth, player, agentKeyHash }, answer);
    return session.send({ case: "loginReply", value: { requestId, ...verdict } });
  }
}

/**
 * A settle from the agent's report that failed (the database away) is logged, not the stream's end:
 * the agent sends the report again on its next connection, and ending this one would only make it
 * reconnect sooner into the same failure.
 */
async function unlessFailed(deps: AgentStreamDeps, settling: Promise<void>): Promise<void> {
  try {
    await settling;
  } catch (error) {
    deps.logger.warn({ err: error }, "settling console commands from an agent's report failed; its next connection reports them again");
  }
}

/** Handles one message of the agent's; a throw ends the stream with that error. */
export function createMessageHandler(deps: AgentStreamDeps, session: StreamSession): (request: ConnectRequest) => Promise<void> {
  const { connection } = session;
  const serverId = session.agent.server.id;
  /** The memory limit last stored from this stream's samples. */
  let memoryLimit: bigint | undefined;
  return async ({ message }) => {
    if (message.case === "hello") return hello(deps, session, message.value);
    const { playerAuth } = session;
    if (playerAuth === undefined) throw fail("failed_precondition", "send Hello first");
    switch (message.case) {
      case "players":
        connection.players = distinctPlayers(message.value.players);
        await replacePlayers(session.em, serverId, connection.id, connection.players, deps.clock.now());
        return;
      case "heartbeat":
        return heartbeat(deps, session);
      case "loginCommand":
      case "confirmCommand":
        return loginCommand(deps, session, playerAuth, message);
      case "consoleResult":
        // One nobody waits for (late, or sent again on a new connection) settles its record.
        if (connection.console.answered(message.value)) return;
        return unlessFailed(deps, settleReported(deps, session.agent.server, message.value));
      case "gameState":
        return gameStateChanged(deps, session.agent.server, connection.id, message.value);
      case "consoleReceived":
        return unlessFailed(deps, settleNeverReceivedCommands(deps, session.agent.server, { connectionId: connection.id, bootId: session.bootId }, message.value));
      case "fileResult":
        return connection.files.answered(message.value);
      case "lifecycleResult":
        return connection.lifecycle.answered(message.value);
      case "stats": {
        deps.stats.add(serverId, message.value);
        const limit = message.value.memoryLimitBytes;
        if (limit === undefined || limit === memoryLimit) return;
        memoryLimit = limit;
        // For the memory threshold (core/alerts/thresholds.ts); lost, the next connection sends it again.
        return storeMemoryLimit(deps.statements.on(session.em), serverId, limit).catch((error) =>
          deps.logger.warn({ err: error }, "a server's memory limit could not be stored"),
        );
      }
      case "consoleOutput":
        connection.console.printed(message.value);
        return deps.consoles.printed(serverId, message.value.lines, message.value.dropped);
    }
  };
}
