/**
 * One agent stream's side of the game server's console: the ConsoleCommands core sent it, each
 * waiting for its ConsoleResult by request id, and the recent lines its ConsoleOutput carried (a
 * small ring, which a live console starts from). A command waits at most its timeout; when the
 * stream ends, every command still waiting fails at once, never hangs.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ConnectResponseSchema, ConsoleOutput, ConsoleResult } from "../../gen/outpost/agent/v1/agent_service_pb.js";
import { createAnswerWaits } from "./answer-waits.ts";

/** How long a console command waits for the agent's answer (told to the agent as timeout_ms). */
export const consoleTimeoutMs = 5_000;

/** The console lines each stream keeps for a live console that opens. */
export const recentLinesKept = 200;

/** Commands that may wait for one agent's answers at once; past it, a command is refused. */
export const maxWaitingCommands = 64;

/** What running a command gave, as the agent answered. */
export interface ConsoleAnswer {
  success: boolean;
  output: string[];
  /** Why it did not run; "" on success. */
  error: string;
}

type Send = (message: MessageInitShape<typeof ConnectResponseSchema>["message"]) => void;

export interface ConnectionConsole {
  /** Sends the command and resolves with its ConsoleResult; rejects {@link AgentUnanswered}. */
  run(requestId: string, command: string, timeoutMs: number): Promise<ConsoleAnswer>;
  /** A ConsoleResult arrived: answers its command; false when no command of this stream waits for it. */
  answered(result: ConsoleResult): boolean;
  /** A ConsoleOutput arrived: kept among the recent lines. */
  printed(output: ConsoleOutput): void;
  /** The last {@link recentLinesKept} lines, oldest first. */
  recent(): string[];
  /** The stream ended: every waiting command fails with "offline", and so does any later one. */
  close(): void;
}

export function createConnectionConsole(send: Send): ConnectionConsole {
  const waits = createAnswerWaits<ConsoleAnswer>(maxWaitingCommands);
  let lines: string[] = [];

  return {
    run(requestId, command, timeoutMs) {
      return waits.ask(requestId, timeoutMs, () => send({ case: "consoleCommand", value: { requestId, command, timeoutMs } }));
    },
    answered(result) {
      return waits.answer(result.requestId, { success: result.success, output: result.output, error: result.success ? "" : result.error });
    },
    printed(output) {
      lines.push(...output.lines);
      if (lines.length > recentLinesKept) lines = lines.slice(-recentLinesKept);
    },
    recent() {
      return [...lines];
    },
    close: () => waits.close(),
  };
}
