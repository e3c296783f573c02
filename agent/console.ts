/**
 * The agent's side of the game server's console: running the commands Outpost sends
 * (servers/executeConsoleCommand) with the handler the agent was given, and streaming what the
 * console prints for the dashboard's live console. Output is batched and capped here, once, so
 * every kind of agent (wrap, the flying-squid plugin) stays within the contract's limits.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ConnectRequestSchema, ConsoleCommand } from "../gen/outpost/agent/v1/agent_service_pb.js";
import { consoleCommandProblem } from "../contract/console-command.ts";

/** What running one console command gave. */
export interface ConsoleRun {
  /** The command ran (was written to the console, or the server's own runner took it). */
  success: boolean;
  /** The console lines that followed the command, in order. */
  output: string[];
  /** Why it did not run, when `success` is false. */
  error?: string;
}

/**
 * Runs `command` (no leading slash, no newline) on the game server's console and resolves with
 * the lines that followed it. `signal` aborts when Outpost stops waiting (or the connection
 * drops): resolve then with what was collected.
 */
export type ConsoleHandler = (command: string, signal: AbortSignal) => Promise<ConsoleRun>;

type Send = (message: MessageInitShape<typeof ConnectRequestSchema>["message"]) => void;

/** The contract's limits on console lines (ConsoleResult, ConsoleOutput). */
export const consoleLimits = { linesPerMessage: 200, lineChars: 4096, errorChars: 1024 } as const;

/** How long the live output waits to batch lines, and how many it holds at most meanwhile. */
const flushEveryMs = 100;
const maxBufferedLines = 1000;

/**
 * Outpost refuses a NUL in any text (the whole message, and the agent's stream with it): what a
 * console prints with one shows U+FFFD in its place.
 */
const withoutNul = (text: string) => text.replace(/\u0000/g, "\uFFFD");

/** A line as the contract takes it: no trailing newline, no NUL, at most {@link consoleLimits.lineChars}. */
export function consoleLine(line: string): string {
  const trimmed = withoutNul(line.replace(/[\r\n]+$/, ""));
  return trimmed.length > consoleLimits.lineChars ? trimmed.slice(0, consoleLimits.lineChars - 1) + "…" : trimmed;
}

/**
 * Answers one ConsoleCommand with one ConsoleResult: the handler's output, capped to the
 * contract's limits (the last lines kept), or why it could not run. Without a handler, says so.
 */
export async function answerConsoleCommand(handler: ConsoleHandler | undefined, command: ConsoleCommand, dropped: AbortSignal, send: Send): Promise<void> {
  const { requestId } = command;
  let run: ConsoleRun;
  const problem = consoleCommandProblem(command.command);
  if (!handler) {
    run = { success: false, output: [], error: "this agent cannot reach the game server's console" };
  } else if (problem) {
    // Outpost refuses these; an agent does not rely on it, whichever console it serves.
    run = { success: false, output: [], error: problem };
  } else {
    // Answer a little before Outpost stops waiting, so the output collected so far arrives.
    const margin = Math.min(250, command.timeoutMs / 4);
    const stop = stopSignal(dropped, Math.max(1, command.timeoutMs - margin));
    try {
      run = await handler(command.command, stop.signal);
    } catch (error) {
      run = { success: false, output: [], error: (error as Error).message || "the command failed" };
    } finally {
      stop.release();
    }
  }
  const output = run.output.slice(-consoleLimits.linesPerMessage).map(consoleLine);
  const error = withoutNul(run.error ?? "").slice(0, consoleLimits.errorChars);
  send({ case: "consoleResult", value: { requestId, success: run.success, output, error: run.success ? "" : error } });
}

/**
 * A signal that aborts when `dropped` does or after `ms`, and its release once the command is
 * over. Not AbortSignal.any/timeout: their timer outlived every command that answered in time
 * and then fired (with a DOMException) seconds later, and each left a listener on the connection's
 * signal until it was collected, which cost an agent under a stream of commands more than running them.
 */
function stopSignal(dropped: AbortSignal, ms: number): { signal: AbortSignal; release(): void } {
  const controller = new AbortController();
  const onDropped = () => controller.abort(dropped.reason);
  const timer = setTimeout(() => controller.abort(new DOMException("the command ran out of time", "TimeoutError")), ms);
  if (dropped.aborted) onDropped();
  else dropped.addEventListener("abort", onDropped, { once: true });
  return {
    signal: controller.signal,
    release() {
      clearTimeout(timer);
      dropped.removeEventListener("abort", onDropped);
    },
  };
}

/** Sends one message and resolves once the connection has taken it (or failed to). */
type SendWaiting = (message: MessageInitShape<typeof ConnectRequestSchema>["message"]) => Promise<unknown> | void;

export interface ConsoleOutlet {
  /** Queues lines for the live console; sent in batches while connected. */
  write(lines: string[]): void;
  /** The connection is up (send through `send`) or down (`undefined`: lines are discarded). */
  attach(send: SendWaiting | undefined): void;
  /** Stops the batching timer. */
  close(): void;
}

/**
 * The live console's outlet: lines wait up to {@link flushEveryMs} to travel together, and one
 * ConsoleOutput at a time is on its way: the next waits until the connection has taken it, so a
 * slow Outpost holds back the console, not the heartbeats and answers behind it, and the agent's
 * memory does not grow with it. Past {@link maxBufferedLines} the oldest lines are dropped and
 * counted, which Outpost shows.
 */
export function createConsoleOutlet(): ConsoleOutlet {
  let buffer: string[] = [];
  let dropped = 0;
  let send: SendWaiting | undefined;
  let timer: NodeJS.Timeout | undefined;
  /** The ConsoleOutput on its way, if any. */
  let inFlight: Promise<unknown> | undefined;

  function flush() {
    timer = undefined;
    if (!send || inFlight || !buffer.length) return;
    const lines = buffer.splice(0, consoleLimits.linesPerMessage);
    const sending = Promise.resolve(send({ case: "consoleOutput", value: { lines, dropped } })).catch(() => {});
    dropped = 0;
    inFlight = sending;
    void sending.then(() => {
      if (inFlight !== sending) return; // The connection changed meanwhile; its next one starts afresh.
      inFlight = undefined;
      flush();
    });
  }

  return {
    write(lines) {
      if (!send || !lines.length) return;
      buffer.push(...lines.map(consoleLine));
      if (buffer.length > maxBufferedLines) {
        dropped += buffer.length - maxBufferedLines;
        buffer = buffer.slice(-maxBufferedLines);
      }
      timer ??= setTimeout(flush, flushEveryMs);
    },
    attach(next) {
      send = next;
      inFlight = undefined;
      if (!send) {
        buffer = [];
        dropped = 0;
      }
    },
    close() {
      clearTimeout(timer);
      timer = undefined;
      buffer = [];
    },
  };
}
