/**
 * The game-server agent's connection to Outpost: it dials out to `<url>/api/rpc` over HTTP/2 with
 * the server's agent key, says what the server is, keeps the stream alive with heartbeats, reports
 * the players online and plays in-game commands (a login code, then the player's confirmation when
 * Outpost asks for it), and reconnects after a drop with exponential
 * backoff and jitter. A refusal (a key that does not work, the wrong game) stops it instead:
 * trying again would not help. Imports only the contract, never core.
 */
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { createWritableIterable } from "@connectrpc/connect/protocol";
import type { MessageInitShape } from "@bufbuild/protobuf";
import {
  AgentService,
  ConfirmCommand_Decision,
  type ConnectRequestSchema,
  type ConnectResponse,
  type Welcome,
} from "../gen/outpost/agent/v1/agent_service_pb.js";
import { PlayerAuth, type Game } from "../gen/outpost/servers/v1/resources_pb.js";
import { agentKeyHeader } from "../contract/credentials.ts";
import { answerConsoleCommand, createConsoleOutlet, type ConsoleHandler } from "./console.ts";
import { commandProblem, maxPlayers, playerProblem, type Player } from "./players.ts";

export { PlayerAuth };
export type { ConsoleHandler, ConsoleRun } from "./console.ts";
export { commandProblem, maxPlayers, playerProblem, type Player } from "./players.ts";

export interface Reply {
  /** The player is now signed in. */
  accepted: boolean;
  /** What to show the player. */
  message: string;
  /**
   * Set when a login code claimed a sign-in that waits for the player to confirm it (then
   * `message` is the prompt): answer with {@link Agent.confirm} or {@link Agent.cancel}, or the
   * player types `/outpost confirm` or `/outpost cancel`.
   */
  confirmation?: Confirmation;
}

export interface Confirmation {
  appName: string;
  /** Where the app receives the sign-in (its redirect URI's host). */
  redirectHost: string;
  expiresInSeconds: number;
}

export interface AgentOptions {
  /** Outpost's ACCOUNT_BASE_URL, e.g. http://localhost:3000. */
  url: string;
  /** The server's agent key (opa_…). */
  key: string;
  game: Game;
  playerAuth: PlayerAuth;
  agentVersion?: string;
  /** Reconnect when the connection drops (never after a refusal). Default true. */
  reconnect?: boolean;
  /** Another transport than HTTP/2 to `url`, e.g. an in-process one. */
  transport?: Transport;
  /** Heartbeats this often instead of what Outpost asks in Welcome. */
  heartbeatMs?: number;
  /** The first reconnect delay and the longest (default 500 ms and 30 s). */
  backoff?: { initialMs: number; maxMs: number };
  /**
   * Runs the console commands Outpost sends (servers/executeConsoleCommand). Without it the agent
   * tells Outpost it has no console, and such calls are refused there.
   */
  console?: ConsoleHandler;
}

export type AgentEvent =
  | { kind: "connected"; welcome: Welcome }
  | { kind: "disconnected"; error: ConnectError; retryInMs: number }
  /** Stopped for good: by {@link Agent.stop} (no error) or refused (the error). */
  | { kind: "stopped"; error?: ConnectError };

export interface Agent {
  /** The Welcome of the current connection, once there is one; rejects if the agent stops first. */
  connected(timeoutMs?: number): Promise<Welcome>;
  /**
   * The players online now; sent at once and after every reconnect. Throws, sending nothing, for a
   * list the contract refuses (a bad name or UUID, more than {@link maxPlayers}): Outpost would end
   * the stream over it, and reconnecting could not help.
   */
  setPlayers(players: Player[]): void;
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

/** Errors after which reconnecting cannot help: the key, the game or the contract is wrong. */
const refusals = new Set([Code.Unauthenticated, Code.PermissionDenied, Code.FailedPrecondition, Code.InvalidArgument, Code.Unimplemented]);

/** The delay before reconnect attempt `attempt` (0-based): exponential, capped, half of it random. */
export function backoffMs(attempt: number, initialMs: number, maxMs: number): number {
  const base = Math.min(maxMs, initialMs * 2 ** Math.min(attempt, 30));
  return Math.round(base / 2 + (Math.random() * base) / 2);
}

interface Live {
  welcome: Welcome;
  send(message: MessageInitShape<typeof ConnectRequestSchema>["message"]): void;
}

export function startAgent(options: AgentOptions, onEvent: (event: AgentEvent) => void = () => {}): Agent {
  const transport =
    options.transport ?? createConnectTransport({ baseUrl: new URL("/api/rpc", options.url).toString(), httpVersion: "2" });
  const client = createClient(AgentService, transport);
  const { initialMs, maxMs } = options.backoff ?? { initialMs: 500, maxMs: 30_000 };
  let players: Player[] = [];
  let live: Live | undefined;
  let stopping = false;
  let current: { abort: AbortController; closeRequests(): void } | undefined;
  let nextRequestId = 0;
  const pending = new Map<string, (reply: Reply | Error) => void>();
  const listeners = new Set<(event: AgentEvent) => void>([onEvent]);
  const emit = (event: AgentEvent) => listeners.forEach((listener) => listener(event));
  let wake: (() => void) | undefined;
  const consoleOutlet = createConsoleOutlet();

  /** One connection, until it ends; throws why it ended, unless the agent is stopping. */
  async function connectOnce(onWelcome: () => void): Promise<void> {
    const abort = new AbortController();
    const requests = createWritableIterable<MessageInitShape<typeof ConnectRequestSchema>>();
    const send: Live["send"] = (message) => void requests.write({ message }).catch(() => {});
    current = { abort, closeRequests: () => requests.close() };
    let heartbeat: NodeJS.Timeout | undefined;
    let silence: NodeJS.Timeout | undefined;
    let silenceLimitMs = 30_000;
    const heard = () => {
      clearTimeout(silence);
      silence = setTimeout(() => abort.abort(new ConnectError(`Outpost sent nothing for ${silenceLimitMs / 1000} seconds`, Code.DeadlineExceeded)), silenceLimitMs);
    };
    const hello = { game: options.game, playerAuth: options.playerAuth, agentVersion: options.agentVersion ?? "", console: !!options.console };
    send({ case: "hello", value: hello });
    try {
      heard();
      const responses = client.connect(requests, { signal: abort.signal, headers: { [agentKeyHeader]: options.key } });
      for await (const response of responses) {
        heard();
        const { message } = response as ConnectResponse;
        if (message.case === "welcome") {
          onWelcome();
          const everyMs = options.heartbeatMs ?? message.value.heartbeatSeconds * 1000;
          silenceLimitMs = 3 * everyMs;
          heartbeat = setInterval(() => send({ case: "heartbeat", value: {} }), everyMs);
          live = { welcome: message.value, send };
          if (players.length) send({ case: "players", value: { players } });
          consoleOutlet.attach(send);
          emit({ kind: "connected", welcome: message.value });
        } else if (message.case === "loginReply") {
          const { requestId, accepted, message: text, confirmation } = message.value;
          const reply: Reply = { accepted, message: text };
          if (confirmation) {
            const { appName, redirectHost, expiresInSeconds } = confirmation;
            reply.confirmation = { appName, redirectHost, expiresInSeconds };
          }
          pending.get(requestId)?.(reply);
        } else if (message.case === "consoleCommand") {
          void answerConsoleCommand(options.console, message.value, abort.signal, send);
        }
      }
      if (!stopping) throw new ConnectError("Outpost closed the connection", Code.Unavailable);
    } catch (error) {
      if (abort.signal.aborted && abort.signal.reason instanceof ConnectError) throw abort.signal.reason;
      throw error;
    } finally {
      clearInterval(heartbeat);
      clearTimeout(silence);
      consoleOutlet.attach(undefined);
      live = undefined;
      current = undefined;
      requests.close();
      for (const settle of pending.values()) settle(new Error("the connection to Outpost dropped before it answered"));
      pending.clear();
    }
  }

  const stopped = (async () => {
    let attempt = 0;
    while (!stopping) {
      let welcomed = false;
      const error = await connectOnce(() => (welcomed = true)).then(
        () => undefined,
        (caught) => ConnectError.from(caught),
      );
      if (stopping || !error) break;
      if (refusals.has(error.code) || options.reconnect === false) {
        emit({ kind: "stopped", error });
        throw error;
      }
      attempt = welcomed ? 0 : attempt + 1;
      const retryInMs = backoffMs(attempt, initialMs, maxMs);
      emit({ kind: "disconnected", error, retryInMs });
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, retryInMs);
        wake = () => (clearTimeout(timer), resolve());
      });
    }
    emit({ kind: "stopped" });
  })();
  void stopped.finally(() => consoleOutlet.close()).catch(() => {});
  stopped.catch(() => {});

  function connected(timeoutMs = 15_000): Promise<Welcome> {
    if (live) return Promise.resolve(live.welcome);
    return new Promise<Welcome>((resolve, reject) => {
      const timer = setTimeout(() => done(new Error(`not connected to Outpost within ${timeoutMs / 1000} seconds`)), timeoutMs);
      const listener = (event: AgentEvent) => {
        if (event.kind === "connected") done(event.welcome);
        if (event.kind === "stopped") done(event.error ?? new Error("the agent stopped"));
      };
      const done = (result: Welcome | Error) => {
        clearTimeout(timer);
        listeners.delete(listener);
        if (result instanceof Error) reject(result);
        else resolve(result);
      };
      listeners.add(listener);
    });
  }

  /** Sends the message `build` makes with a new request id and resolves with its reply. */
  async function request(timeoutMs: number, build: (requestId: string) => MessageInitShape<typeof ConnectRequestSchema>["message"]): Promise<Reply> {
    await connected(timeoutMs);
    const { send } = live!;
    const requestId = String(++nextRequestId);
    return new Promise<Reply>((resolve, reject) => {
      const timer = setTimeout(() => settle(new Error(`Outpost did not answer within ${timeoutMs / 1000} seconds`)), timeoutMs);
      const settle = (reply: Reply | Error) => {
        clearTimeout(timer);
        pending.delete(requestId);
        if (reply instanceof Error) reject(reply);
        else resolve(reply);
      };
      pending.set(requestId, settle);
      send(build(requestId));
    });
  }

  async function answer(player: Player, decision: ConfirmCommand_Decision, timeoutMs: number): Promise<Reply> {
    const problem = playerProblem(player);
    if (problem) throw new Error(problem);
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
      players = [...list];
      live?.send({ case: "players", value: { players } });
    },
    async playCommand(player, text, timeoutMs = 15_000) {
      const problem = commandProblem(player, text);
      if (problem) throw new Error(problem);
      return request(timeoutMs, (requestId) => ({ case: "loginCommand", value: { requestId, playerUuid: player.uuid, playerName: player.name, text } }));
    },
    confirm(player, timeoutMs = 15_000) {
      return answer(player, ConfirmCommand_Decision.CONFIRM, timeoutMs);
    },
    cancel(player, timeoutMs = 15_000) {
      return answer(player, ConfirmCommand_Decision.CANCEL, timeoutMs);
    },
    consoleOutput(lines) {
      consoleOutlet.write(lines);
    },
    async stop() {
      stopping = true;
      wake?.();
      const connection = current;
      // Half-close: Outpost ends the stream and records the server offline. Abort if it does not.
      connection?.closeRequests();
      const timer = connection && setTimeout(() => connection.abort.abort(), 3_000);
      await stopped.catch(() => {});
      clearTimeout(timer);
    },
  };
}
