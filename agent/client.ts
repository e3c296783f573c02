/**
 * The game-server agent's connection to Outpost: it dials out to `<url>/api/rpc` over HTTP/2 with
 * the server's agent key, says what the server is, keeps the stream alive with heartbeats, reports
 * the players online and plays in-game commands (a login code, then the player's confirmation when
 * Outpost asks for it), serves the server's files when its operator lets it (files/), and
 * reconnects after a drop with exponential backoff and jitter. A refusal (a key that does not
 * work, the wrong game) stops it instead: trying again would not help — except a frozen server's
 * (its organization's plan is below its server count), which ends when the plan is raised: then
 * it keeps trying, at the slowest pace. One connection is connection.ts; the questions Outpost
 * answers by request id are requests.ts; the options and events, options.ts. Imports only the
 * contract, never core.
 */
import { createConsoleMemory } from "./console-memory.ts";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import type { Http2Session } from "node:http2";
import { createConnectTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { AgentService, ConfirmCommand_Decision, GameStateChanged_Cause, type Welcome } from "../gen/outpost/agent/v1/agent_service_pb.js";
import { GameState, PlayerAuth } from "../gen/outpost/servers/v1/resources_pb.js";
import { ErrorInfoSchema } from "../gen/outpost/errors/v1/errors_pb.js";
import { openConnection, type Connection, type ConnectionDeps, type GameStateReport, type Live } from "./connection.ts";
import { stateDetail } from "./lifecycle.ts";
import type { AgentEvent, AgentOptions } from "./options.ts";
import { createConsoleOutlet } from "./console.ts";
import { openServedFiles } from "./files/requests.ts";
import { commandProblem, maxPlayers, playerProblem, type Player } from "./players.ts";
import { ConnectionDropped, createPendingRequests, type AgentMessage, type Reply } from "./requests.ts";

export { GameState, GameStateChanged_Cause, PlayerAuth };
export { LifecycleAction, type LifecycleHandler, type LifecycleOutcome } from "./lifecycle.ts";
export type { ConsoleHandler, ConsoleRun } from "./console.ts";
export { commandProblem, maxPlayers, playerProblem, type Player } from "./players.ts";
export type { Confirmation, Reply } from "./requests.ts";
export type { AgentEvent, AgentFilesOptions, AgentOptions, FileOperationName } from "./options.ts";
export type { FilesMode } from "./files/sandbox.ts";

export interface Agent {
  /** The Welcome of the current connection, once there is one; rejects if the agent stops first. */
  connected(timeoutMs?: number): Promise<Welcome>;
  /**
   * The players online now; sent at once and after every reconnect. Throws, sending nothing, for a
   * list the contract refuses (a bad name or UUID, more than {@link maxPlayers}): Outpost would end
   * the stream over it, and reconnecting could not help.
   */
  setPlayers(players: Player[]): void;
  /**
   * The game server's process changed state (for an agent that runs it), with how in words (one
   * line, cut to 200 characters) and what caused it (the request id of Outpost's LifecycleRequest
   * with CAUSE_OUTPOST): sent now when connected, and after each reconnect.
   */
  setGameState(state: GameState, detail?: string, cause?: { cause: GameStateChanged_Cause; requestId?: string }): void;
  /**
   * How the server is doing (an agent that runs it: every 10 s): sent now when connected, dropped
   * otherwise. Players default to those last reported.
   */
  reportStats(sample: StatsReport): void;
  /** Plays a command as `player` and resolves with what Outpost tells them. */
  playCommand(player: Player, text: string, timeoutMs?: number): Promise<Reply>;
  /**
   * The player confirms the sign-in they claimed on this server (as from a button of the prompt;
   * the same as their typing `/outpost confirm`) and resolves with what Outpost tells them.
   */
  confirm(player: Player, timeoutMs?: number): Promise<Reply>;
  /** The player refuses the sign-in they claimed on this server (the same as `/outpost cancel`). */
  cancel(player: Player, timeoutMs?: number): Promise<Reply>;
  /**
   * Lines the game server's console printed, for the dashboard's live console: batched, capped,
   * and discarded while not connected.
   */
  consoleOutput(lines: string[]): void;
  /** Closes the stream (the server goes offline) and stops reconnecting. */
  stop(): Promise<void>;
  /** Settles when the agent stops: resolves after {@link stop}, rejects with a refusal. */
  readonly stopped: Promise<void>;
}

/** A sample of how the server is doing; a figure not measured is left out. */
export interface StatsReport {
  cpuPercent?: number;
  memoryBytes?: bigint;
  players?: number;
  tps?: number;
  mspt?: number;
  diskBytes?: bigint;
  memoryLimitBytes?: bigint;
}

/** Errors after which reconnecting cannot help: the key, the game or the contract is wrong. */
const refusals = new Set([Code.Unauthenticated, Code.PermissionDenied, Code.FailedPrecondition, Code.InvalidArgument, Code.Unimplemented]);

/** The delay before reconnect attempt `attempt` (0-based): exponential, capped, half of it random. */
export function backoffMs(attempt: number, initialMs: number, maxMs: number): number {
  const base = Math.min(maxMs, initialMs * 2 ** Math.min(attempt, 30));
  return Math.round(base / 2 + (Math.random() * base) / 2);
}

/** What the agent knows between connections. */
interface AgentState {
  /** The game's state as last set, sent again after each reconnect. */
  gameState?: GameStateReport;
  players: Player[];
  /** The welcomed connection, while there is one. */
  live?: Live;
  /** The connection being made or in use. */
  current?: Connection;
  stopping: boolean;
  /** Ends the wait before the next reconnect attempt. */
  wake?: () => void;
  listeners: Set<(event: AgentEvent) => void>;
}

/** The HTTP/2 flow-control windows the agent grants Outpost: per stream, and per connection (Outpost's edge grants the same). */
const streamWindow = 2 * 1024 * 1024;
const sessionWindow = 4 * 1024 * 1024;

/**
 * HTTP/2 sessions whose windows are a file piece's size and twice that, not HTTP/2's 64 KiB, so
 * that a 1 MiB piece of an upload arrives without sixteen round trips of window updates. The
 * connection's window is set on the session once it exists, which http2.connect's options cannot.
 */
class WideWindowSessions extends Http2SessionManager {
  private readonly widened = new WeakSet<Http2Session>();

  override async request(...args: Parameters<Http2SessionManager["request"]>) {
    const stream = await super.request(...args);
    const session = stream.session;
    if (session && !this.widened.has(session)) {
      this.widened.add(session);
      session.setLocalWindowSize(sessionWindow);
    }
    return stream;
  }
}

/** The agent's line to Outpost: HTTP/2 (h2c on a plain http URL), binary, so a file's bytes travel as they are, not as base64 in JSON. */
function agentTransport(baseUrl: string) {
  const sessionManager = new WideWindowSessions(baseUrl, undefined, { settings: { initialWindowSize: streamWindow } });
  // No compression either way: a file's pieces are mostly compressed already (jars, worlds), and
  // gzip of a 1 MiB piece costs more than sending it on loopback or a LAN.
  return createConnectTransport({ baseUrl, httpVersion: "2", useBinaryFormat: true, sessionManager, acceptCompression: [] });
}

export function startAgent(options: AgentOptions, onEvent: (event: AgentEvent) => void = () => {}): Agent {
  const transport = options.transport ?? agentTransport(new URL("/api/rpc", options.url).toString());
  const state: AgentState = { players: [], stopping: false, listeners: new Set([onEvent]) };
  const emit = (event: AgentEvent) => state.listeners.forEach((listener) => listener(event));
  const consoleOutlet = createConsoleOutlet();
  const requests = createPendingRequests();
  const deps: ConnectionDeps = {
    client: createClient(AgentService, transport),
    options,
    players: () => state.players,
    gameState: () => state.gameState,
    consoleOutlet,
    consoleMemory: createConsoleMemory(),
    files: openServedFiles(options.files, (error) => emit({ kind: "fileError", error })),
    requests,
    setLive: (live) => (state.live = live),
    emit,
    stopping: () => state.stopping,
  };
  const stopped = keepConnected(state, deps, options);
  void stopped.finally(() => consoleOutlet.close()).catch(() => {});
  stopped.catch(() => {});

  const connected = (timeoutMs = 15_000) => whenConnected(state, timeoutMs);
  /**
   * Sends the message `build` makes with a new request id and resolves with its reply. A
   * connection that drops before the reply (Outpost restarting: its instance ends the stream and
   * the agent reconnects, maybe to another) is not the player's problem: the question is asked
   * again on the next connection while time is left. Asking twice is safe: a login code claimed
   * again by the same player on the same server is the same claim, and a confirmation that
   * already went through is answered as such.
   */
  async function request(timeoutMs: number, build: (requestId: string) => AgentMessage): Promise<Reply> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      await connected(Math.max(1, deadline - Date.now()));
      try {
        return await requests.request(state.live!.send, Math.max(1, deadline - Date.now()), build);
      } catch (error) {
        if (!(error instanceof ConnectionDropped) || state.stopping || Date.now() >= deadline) throw error;
      }
    }
  }
  function answer(player: Player, decision: ConfirmCommand_Decision, timeoutMs: number): Promise<Reply> {
    const problem = playerProblem(player);
    if (problem) return Promise.reject(new Error(problem));
    return request(timeoutMs, (requestId) => ({ case: "confirmCommand", value: { requestId, playerUuid: player.uuid, playerName: player.name, decision } }));
  }

  return {
    stopped,
    connected,
    setPlayers(list) {
      if (list.length > maxPlayers) throw new Error(`at most ${maxPlayers} players can be reported (got ${list.length})`);
      for (const player of list) {
        const problem = playerProblem(player);
        if (problem) throw new Error(`players: ${problem}`);
      }
      state.players = [...list];
      state.live?.send({ case: "players", value: { players: state.players } });
    },
    async playCommand(player, text, timeoutMs = 15_000) {
      const problem = commandProblem(player, text);
      if (problem) throw new Error(problem);
      return request(timeoutMs, (requestId) => ({ case: "loginCommand", value: { requestId, playerUuid: player.uuid, playerName: player.name, text } }));
    },
    confirm: (player, timeoutMs = 15_000) => answer(player, ConfirmCommand_Decision.CONFIRM, timeoutMs),
    cancel: (player, timeoutMs = 15_000) => answer(player, ConfirmCommand_Decision.CANCEL, timeoutMs),
    consoleOutput: (lines) => consoleOutlet.write(lines),
    setGameState(gameState, detail = "", cause) {
      state.gameState = { state: gameState, detail: stateDetail(detail), cause: cause?.cause, requestId: cause?.requestId };
      state.live?.send({ case: "gameState", value: state.gameState });
    },
    reportStats(sample) {
      state.live?.send({ case: "stats", value: { players: state.players.length, ...sample } });
    },
    stop: () => stopAgent(state, stopped),
  };
}

/** Outpost refused the server as frozen: the refusal lasts only until the plan is raised or servers are deleted. */
export function isFrozen(error: ConnectError): boolean {
  return error.findDetails(ErrorInfoSchema).some((info) => info.reason === "server_frozen");
}

/** Connects, and reconnects after each drop with backoff, until stopped or refused (then rejects). */
async function keepConnected(state: AgentState, deps: ConnectionDeps, options: AgentOptions): Promise<void> {
  const { initialMs, maxMs } = options.backoff ?? { initialMs: 500, maxMs: 30_000 };
  let attempt = 0;
  while (!state.stopping) {
    const connection = (state.current = openConnection(deps));
    const error = await connection.ended.then(
      () => undefined,
      (caught) => ConnectError.from(caught),
    );
    state.current = undefined;
    if (state.stopping || !error) break;
    const frozen = isFrozen(error);
    if ((refusals.has(error.code) && !frozen) || options.reconnect === false) {
      deps.emit({ kind: "stopped", error });
      throw error;
    }
    attempt = connection.welcomed() ? 0 : attempt + 1;
    const retryInMs = frozen ? maxMs : backoffMs(attempt, initialMs, maxMs);
    deps.emit({ kind: "disconnected", error, retryInMs });
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, retryInMs);
      state.wake = () => (clearTimeout(timer), resolve());
    });
  }
  deps.emit({ kind: "stopped" });
}

/** The Welcome of the current connection, or of the next one within `timeoutMs`. */
function whenConnected(state: AgentState, timeoutMs: number): Promise<Welcome> {
  if (state.live) return Promise.resolve(state.live.welcome);
  return new Promise<Welcome>((resolve, reject) => {
    const timer = setTimeout(() => done(new Error(`not connected to Outpost within ${timeoutMs / 1000} seconds`)), timeoutMs);
    const listener = (event: AgentEvent) => {
      if (event.kind === "connected") done(event.welcome);
      if (event.kind === "stopped") done(event.error ?? new Error("the agent stopped"));
    };
    const done = (result: Welcome | Error) => {
      clearTimeout(timer);
      state.listeners.delete(listener);
      if (result instanceof Error) reject(result);
      else resolve(result);
    };
    state.listeners.add(listener);
  });
}

async function stopAgent(state: AgentState, stopped: Promise<void>): Promise<void> {
  state.stopping = true;
  state.wake?.();
  const connection = state.current;
  // Half-close: Outpost ends the stream and records the server offline. Abort if it does not.
  connection?.closeRequests();
  const timer = connection && setTimeout(() => connection.abort.abort(), 3_000);
  await stopped.catch(() => {});
  clearTimeout(timer);
}
