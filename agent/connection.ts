/**
 * One connection of the agent to Outpost, from Hello to its end: heartbeats at the pace Welcome
 * asks, a silence limit (three heartbeats) after which the connection counts as dead, the players
 * reported again, and Outpost's messages handed on (replies to their requests, console commands
 * to the console handler, file requests to the files, lifecycle requests to the lifecycle handler). client.ts reconnects around it.
 */
import { Code, ConnectError, type Client } from "@connectrpc/connect";
import { createWritableIterable } from "@connectrpc/connect/protocol";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { AgentService, ConnectResponse, FileRequest, GameStateChangedSchema, Welcome } from "../gen/outpost/agent/v1/agent_service_pb.js";
import { agentKeyHeader } from "../contract/credentials.ts";
import type { AgentEvent, AgentOptions } from "./options.ts";
import { answerConsoleCommand, type ConsoleOutlet } from "./console.ts";
import type { ConsoleMemory } from "./console-memory.ts";
import { createFileRequests, filesModeOnWire, type ServedFiles } from "./files/requests.ts";
import type { Player } from "./players.ts";
import { answerLifecycleRequest } from "./lifecycle.ts";
import { ConnectionDropped, type AgentMessage, type PendingRequests } from "./requests.ts";

/** The game's state as the agent reports it (GameStateChanged). */
export type GameStateReport = Omit<MessageInitShape<typeof GameStateChangedSchema>, "$typeName">;

/** A welcomed connection: what Outpost said, and how to send on it. */
export interface Live {
  welcome: Welcome;
  send(message: AgentMessage): void;
}

/** What a connection needs of the agent around it. */
export interface ConnectionDeps {
  client: Client<typeof AgentService>;
  options: AgentOptions;
  /** The players online now, reported once welcomed. */
  players(): Player[];
  /** The game's state, reported once welcomed (none for an agent that does not run the server). */
  gameState(): GameStateReport | undefined;
  consoleOutlet: ConsoleOutlet;
  /** The console commands of this run, and their results (console-memory.ts). */
  consoleMemory: ConsoleMemory;
  /** The files the agent serves, opened once for every connection (Hello waits for them). */
  files: Promise<ServedFiles>;
  requests: PendingRequests;
  /** The connection was welcomed (`live`) or has ended (`undefined`). */
  setLive(live: Live | undefined): void;
  emit(event: AgentEvent): void;
  /** Whether the agent is stopping, when the end of the stream is no error. */
  stopping(): boolean;
}

export interface Connection {
  abort: AbortController;
  /** Half-closes the stream: Outpost then ends it. */
  closeRequests(): void;
  /** Whether Outpost welcomed this connection. */
  welcomed(): boolean;
  /** Settles when the connection ends: rejects with why, unless the agent is stopping. */
  ended: Promise<void>;
}

export function openConnection(deps: ConnectionDeps): Connection {
  const abort = new AbortController();
  const requests = createWritableIterable<{ message: AgentMessage }>();
  let welcomed = false;
  const ended = run(deps, abort, requests, () => (welcomed = true));
  return { abort, closeRequests: () => requests.close(), welcomed: () => welcomed, ended };
}

type Requests = ReturnType<typeof createWritableIterable<{ message: AgentMessage }>>;

async function run(deps: ConnectionDeps, abort: AbortController, requests: Requests, onWelcome: () => void): Promise<void> {
  const { options } = deps;
  /** Resolves once the stream has taken the message: what the console's outlet waits for. */
  const sendWaiting = (message: AgentMessage) => requests.write({ message }).catch(() => {});
  const send = (message: AgentMessage) => void sendWaiting(message);
  let heartbeat: NodeJS.Timeout | undefined;
  let silence: NodeJS.Timeout | undefined;
  let silenceLimitMs = 30_000;
  const heard = () => {
    // The same timer starts again; a welcome, which changes the limit, drops it for a new one.
    if (silence) return void silence.refresh();
    silence = setTimeout(() => abort.abort(new ConnectError(`Outpost sent nothing for ${silenceLimitMs / 1000} seconds`, Code.DeadlineExceeded)), silenceLimitMs);
  };
  const welcome = (value: Welcome) => {
    onWelcome();
    const everyMs = options.heartbeatMs ?? value.heartbeatSeconds * 1000;
    silenceLimitMs = 3 * everyMs;
    clearTimeout(silence);
    silence = undefined;
    heard();
    heartbeat = setInterval(() => send({ case: "heartbeat", value: {} }), everyMs);
    deps.setLive({ welcome: value, send });
    const players = deps.players();
    if (players.length) send({ case: "players", value: { players } });
    const gameState = deps.gameState();
    if (gameState) send({ case: "gameState", value: gameState });
    deps.consoleOutlet.attach(sendWaiting);
    deps.consoleMemory.attach(send);
    deps.emit({ kind: "connected", welcome: value });
  };
  const files = await deps.files;
  const fileRequests = createFileRequests(files, (error, operation) => deps.emit({ kind: "fileError", error, operation }));
  /** A result for a connection that ended meanwhile goes nowhere: `send` drops it. */
  const answerFileRequest = (request: FileRequest) => void fileRequests.answer(request).then((result) => result && send({ case: "fileResult", value: result }));
  const { game, playerAuth } = options;
  const hello = {
    game,
    playerAuth,
    agentVersion: options.agentVersion ?? "",
    console: !!options.console,
    files: filesModeOnWire(files.mode),
    bootId: deps.consoleMemory.bootId,
    lifecycle: !!options.lifecycle,
  };
  send({ case: "hello", value: hello });
  /** A command's result goes to the memory, which sends it on whichever connection is live when it ends. */
  const toMemory = (message: AgentMessage) => {
    if (message?.case === "consoleResult") deps.consoleMemory.answered(message.value);
  };
  try {
    heard();
    const responses = deps.client.connect(requests, { signal: abort.signal, headers: { [agentKeyHeader]: options.key } });
    for await (const response of responses) {
      heard();
      const { message } = response as ConnectResponse;
      if (message.case === "welcome") welcome(message.value);
      else if (message.case === "loginReply") deps.requests.answer(message.value);
      else if (message.case === "consoleCommand") {
        deps.consoleMemory.received(message.value.requestId);
        void answerConsoleCommand(options.console, message.value, abort.signal, toMemory);
      } else if (message.case === "fileRequest") answerFileRequest(message.value);
      else if (message.case === "lifecycleRequest") void answerLifecycleRequest(options.lifecycle, message.value, send);
    }
    if (!deps.stopping()) throw new ConnectError("Outpost closed the connection", Code.Unavailable);
  } catch (error) {
    if (abort.signal.aborted && abort.signal.reason instanceof ConnectError) throw abort.signal.reason;
    throw error;
  } finally {
    clearInterval(heartbeat);
    clearTimeout(silence);
    deps.consoleOutlet.attach(undefined);
    deps.consoleMemory.attach(undefined);
    fileRequests.close();
    deps.setLive(undefined);
    requests.close();
    deps.requests.failAll(new ConnectionDropped());
  }
}
