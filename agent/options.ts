/**
 * What the agent is started with and what it tells of its connection: the types client.ts (the
 * agent) and connection.ts (one connection) both speak, in a module of their own so that neither
 * imports the other's. client.ts re-exports them: it is the library's entry.
 */
import type { ConnectError, Transport } from "@connectrpc/connect";
import type { FileRequest, Welcome } from "../gen/outpost/agent/v1/agent_service_pb.js";
import type { Game, PlayerAuth } from "../gen/outpost/servers/v1/resources_pb.js";
import type { ConsoleHandler } from "./console.ts";
import type { LifecycleHandler } from "./lifecycle.ts";
import type { FilesMode } from "./files/sandbox.ts";

/** Where Outpost is, what the server is, and how the agent behaves. */
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
  /**
   * Starts, stops, restarts and kills the game server's process as Outpost asks
   * (servers/startServer …), for an agent that runs it. Without it the agent tells Outpost it does
   * not, and such calls are refused there.
   */
  lifecycle?: LifecycleHandler;
  /**
   * The server's files, for the dashboard's files panel. Without it the agent serves none and says
   * so in Hello (files off), and Outpost refuses the files procedures for this server.
   */
  files?: AgentFilesOptions;
}

/** What of the server's directory the agent serves; the operator's choice (`wrap --root --files --files-deny`). */
export interface AgentFilesOptions {
  /**
   * The server's directory: every path Outpost sends is relative to it, and nothing outside it is
   * ever reached. Should it not open as a directory when the agent starts, files are off and a
   * `fileError` event says why.
   */
  root: string;
  /** Default "on"; "read-only" lists and reads only; "off" serves nothing, as no `files` at all. */
  mode?: FilesMode;
  /** Globs relative to the root that Outpost never sees or changes, e.g. `secrets/**`. */
  deny?: string[];
}

/** One of the file operations Outpost asks for (FileRequest's `operation`). */
export type FileOperationName = NonNullable<FileRequest["operation"]["case"]>;

/** What the agent tells whoever started it about its connection (startAgent's `onEvent`). */
export type AgentEvent =
  | { kind: "connected"; welcome: Welcome }
  | { kind: "disconnected"; error: ConnectError; retryInMs: number }
  /** Stopped for good: by the agent's `stop()` (no error) or refused (the error). */
  | { kind: "stopped"; error?: ConnectError }
  /**
   * Something went wrong with the files that no refusal explains: an operation failed on the machine
   * (a full disk, a permission the agent lacks; Outpost was told only that it failed), Outpost sent
   * a request that cannot be answered, or, without `operation`, the files root cannot be served
   * (files are then off). The error may name real paths: it is for the operator, never for Outpost.
   */
  | { kind: "fileError"; error: Error; operation?: FileOperationName };
