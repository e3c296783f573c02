/**
 * Console commands to whichever stream holds the server: the stream the server's row names
 * (`agent_connection_id`), on this instance or another (stream-calls.ts). It also carries the
 * live console (console-feed.ts). One router per process, built by the composition root.
 */
import type { Logger } from "pino";
import type { Bus } from "../bus.ts";
import type { AgentConnection, AgentConnections } from "./connections.ts";
import type { ConsoleAnswer } from "./console.ts";
import { createStreamCalls, type StreamCallKind } from "./stream-calls.ts";
import { answerBudgetBytes, cutToBytes, fitLines, jsonBytes } from "./console-lines.ts";
import { createConsoleFeed, type ConsoleFeed } from "./console-feed.ts";
import { createWatchSlots, type WatchSlots } from "../watch-slots.ts";

/** The most bytes of an answer's error (JSON); the output has the rest of the budget. */
const errorBudgetBytes = 1_500;
/** The live consoles (servers/watchConsole) one user may hold open on an instance, and the instance in all. */
export const consoleWatchesPerUser = 10;
export const consoleWatchesInTotal = 500;

export interface ConsoleTarget {
  serverId: string;
  /** The stream that holds the server, as its row says. */
  connectionId: string;
}

export interface ConsoleRouter extends Omit<ConsoleFeed, "attach"> {
  /**
   * Runs `command` on the target stream's console and resolves with the agent's answer, cut to
   * fit {@link answerBudgetBytes}; rejects {@link AgentUnanswered} when the stream is gone or
   * ends first ("offline"), no answer comes within `timeoutMs` ("timeout"), or too many
   * commands wait for that agent ("busy").
   */
  execute(target: ConsoleTarget, requestId: string, command: string, timeoutMs: number): Promise<ConsoleAnswer>;
  /**
   * The stream holds its server now: commands from other instances reach it, and live consoles
   * hear it, until the returned detach.
   */
  attach(connection: AgentConnection): () => void;
  /** The live consoles open on this instance. */
  watches: WatchSlots;
}

/** The answer within the budget: the error cut short, the oldest output lines dropped and counted. */
export function fitAnswer(answer: ConsoleAnswer): ConsoleAnswer {
  const error = cutToBytes(answer.error, errorBudgetBytes);
  const { lines } = fitLines(answer.output, answerBudgetBytes - jsonBytes(error));
  return { success: answer.success, output: lines, error };
}

/** A well-formed answer from another instance, fitted again, or undefined. */
function readAnswer(value: unknown): ConsoleAnswer | undefined {
  const answer = value as Partial<ConsoleAnswer> | null;
  if (!answer || typeof answer.success !== "boolean" || !Array.isArray(answer.output) || !answer.output.every((l) => typeof l === "string")) return undefined;
  return fitAnswer({ success: answer.success, output: answer.output, error: typeof answer.error === "string" ? answer.error : "" });
}

/** The console's questions to a stream: a command, as typed. */
const consoleCalls: StreamCallKind<string, ConsoleAnswer> = {
  name: "console-command",
  ask: async (connection, requestId, command, timeoutMs) => fitAnswer(await connection.console.run(requestId, command, timeoutMs)),
  readQuestion: (value) => (typeof value === "string" ? value : undefined),
  readAnswer,
};

export function createConsoleRouter(deps: { agents: AgentConnections; bus: Bus; logger: Logger; watches?: WatchSlots }): ConsoleRouter {
  const feed = createConsoleFeed(deps.bus);
  const calls = createStreamCalls(deps, consoleCalls);
  return {
    execute: (target, requestId, command, timeoutMs) => calls.call(target.connectionId, requestId, command, timeoutMs),
    attach(connection) {
      const detachCalls = calls.attach(connection);
      const detachFeed = feed.attach(connection);
      return () => {
        detachCalls();
        detachFeed();
      };
    },
    printed: feed.printed,
    offline: feed.offline,
    watch: feed.watch,
    watches: deps.watches ?? createWatchSlots("console_watch", { perUser: consoleWatchesPerUser, total: consoleWatchesInTotal }, "live consoles"),
  };
}
