/**
 * Console commands to whichever stream holds the server: the stream the server's row names
 * (`agent_connection_id`) runs it, when it is open on this instance. One per process, built by
 * the composition root.
 */
import type { Logger } from "pino";
import type { AgentConnections } from "./connections.ts";
import { ConsoleUnanswered, type ConsoleAnswer } from "./console.ts";
import { answerBudgetBytes, cutToBytes, fitLines, jsonBytes } from "./console-lines.ts";

/** The most bytes of an answer's error (JSON); the output has the rest of the budget. */
const errorBudgetBytes = 1_500;

export interface ConsoleTarget {
  serverId: string;
  /** The stream that holds the server, as its row says. */
  connectionId: string;
}

export interface ConsoleRouter {
  /**
   * Runs `command` on the target stream's console and resolves with the agent's answer, cut to
   * fit {@link answerBudgetBytes}; rejects {@link ConsoleUnanswered} when the stream is gone or
   * ends first ("offline"), the agent takes longer than `timeoutMs` ("timeout"), or too many
   * commands wait for it ("busy").
   */
  execute(target: ConsoleTarget, requestId: string, command: string, timeoutMs: number): Promise<ConsoleAnswer>;
}

/** The answer within the budget: the error cut short, the oldest output lines dropped and counted. */
export function fitAnswer(answer: ConsoleAnswer): ConsoleAnswer {
  const error = cutToBytes(answer.error, errorBudgetBytes);
  const { lines } = fitLines(answer.output, answerBudgetBytes - jsonBytes(error));
  return { success: answer.success, output: lines, error };
}

export function createConsoleRouter(deps: { agents: AgentConnections; logger: Logger }): ConsoleRouter {
  return {
    async execute(target, requestId, command, timeoutMs) {
      const connection = deps.agents.holding(target.connectionId);
      if (!connection) throw new ConsoleUnanswered("offline");
      return fitAnswer(await connection.console.run(requestId, command, timeoutMs));
    },
  };
}
