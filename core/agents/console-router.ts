/**
 * Console commands to whichever stream holds the server: the stream the server's row names
 * (`agent_connection_id`), directly when it is open on this instance, otherwise over the bus to
 * the instance that holds it (each holding stream listens on a topic of its own, and answers on
 * the command's). Addressing the stream, not the server, means a stream that another took over
 * runs nothing, even before it learns so. It also carries the live console (console-feed.ts).
 * One router per process, built by the composition root.
 */
import type { Logger } from "pino";
import type { Bus } from "../bus.ts";
import type { AgentConnection, AgentConnections } from "./connections.ts";
import type { ConsoleAnswer } from "./console.ts";
import { AgentUnanswered } from "./answer-waits.ts";
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

/** A command for a stream on another instance. */
interface RemoteCommand {
  requestId: string;
  command: string;
  timeoutMs: number;
}

/** What comes back: the answer, or why there is none. */
type RemoteResult = { answer: ConsoleAnswer } | { unanswered: AgentUnanswered["outcome"]; sent: boolean };

/** How much longer the calling instance waits than the holding one, which answers within the timeout. */
const remoteMarginMs = 1_000;

const commandTopic = (connectionId: string) => `console-command:${connectionId}`;
const resultTopic = (requestId: string) => `console-result:${requestId}`;
const outcomes = new Set<string>(["offline", "timeout", "busy"]);

/** The answer within the budget: the error cut short, the oldest output lines dropped and counted. */
export function fitAnswer(answer: ConsoleAnswer): ConsoleAnswer {
  const error = cutToBytes(answer.error, errorBudgetBytes);
  const { lines } = fitLines(answer.output, answerBudgetBytes - jsonBytes(error));
  return { success: answer.success, output: lines, error };
}

/** A well-formed remote result, or undefined. */
function parseResult(payload: string): RemoteResult | undefined {
  try {
    const value = JSON.parse(payload) as Partial<{ answer: ConsoleAnswer; unanswered: string; sent: boolean }>;
    const answer = value.answer;
    if (answer && typeof answer.success === "boolean" && Array.isArray(answer.output) && answer.output.every((l) => typeof l === "string")) {
      return { answer: { success: answer.success, output: answer.output, error: typeof answer.error === "string" ? answer.error : "" } };
    }
    if (typeof value.unanswered === "string" && outcomes.has(value.unanswered))
      return { unanswered: value.unanswered as AgentUnanswered["outcome"], sent: value.sent !== false };
  } catch {
    // Not ours, or damaged: as if nothing came.
  }
  return undefined;
}

function parseCommand(payload: string): RemoteCommand | undefined {
  try {
    const value = JSON.parse(payload) as Partial<RemoteCommand>;
    const { requestId, command, timeoutMs } = value;
    if (typeof requestId === "string" && typeof command === "string" && typeof timeoutMs === "number" && timeoutMs > 0 && timeoutMs <= 60_000) {
      return { requestId, command, timeoutMs };
    }
  } catch {
    // As above.
  }
  return undefined;
}

export function createConsoleRouter(deps: { agents: AgentConnections; bus: Bus; logger: Logger; watches?: WatchSlots }): ConsoleRouter {
  const { bus } = deps;
  const feed = createConsoleFeed(bus);

  /** On the holding instance: runs a command that came over the bus and publishes what it gave. */
  async function serve(connection: AgentConnection, payload: string): Promise<void> {
    const remote = parseCommand(payload);
    if (!remote) return;
    let result: RemoteResult;
    try {
      result = { answer: fitAnswer(await connection.console.run(remote.requestId, remote.command, remote.timeoutMs)) };
    } catch (error) {
      if (!(error instanceof AgentUnanswered)) throw error;
      result = { unanswered: error.outcome, sent: error.sent };
    }
    await bus.publish(resultTopic(remote.requestId), JSON.stringify(result));
  }

  /** On the instance the call reached: sends the command over the bus and waits for its result. */
  function executeRemote(target: ConsoleTarget, remote: RemoteCommand): Promise<ConsoleAnswer> {
    return new Promise((resolve, reject) => {
      const done = (then: () => void) => {
        clearTimeout(timer);
        unsubscribe();
        then();
      };
      // The holding instance's stream times out as well, and then says so (or gives an answer that
      // came just in time): this is the bound should it never answer, a little later than its own.
      const timer = setTimeout(() => done(() => reject(new AgentUnanswered("timeout"))), remote.timeoutMs + remoteMarginMs);
      const unsubscribe = bus.subscribe(resultTopic(remote.requestId), (payload) => {
        const result = parseResult(payload);
        if (!result) return;
        done(() => ("answer" in result ? resolve(result.answer) : reject(new AgentUnanswered(result.unanswered, result.sent))));
      });
      bus.publish(commandTopic(target.connectionId), JSON.stringify(remote)).catch((error) => done(() => reject(error)));
    });
  }

  return {
    async execute(target, requestId, command, timeoutMs) {
      const local = deps.agents.holding(target.connectionId);
      if (local) return fitAnswer(await local.console.run(requestId, command, timeoutMs));
      // One process: a stream not here is no stream.
      if (!bus.shared) throw new AgentUnanswered("offline", false);
      return fitAnswer(await executeRemote(target, { requestId, command, timeoutMs }));
    },
    attach(connection) {
      const unsubscribe = bus.subscribe(commandTopic(connection.id), (payload) => {
        serve(connection, payload).catch((error) =>
          deps.logger.error({ err: error, serverId: connection.serverId }, "answering a console command from another instance failed"),
        );
      });
      const detachFeed = feed.attach(connection);
      return () => {
        unsubscribe();
        detachFeed();
      };
    },
    printed: feed.printed,
    offline: feed.offline,
    watch: feed.watch,
    watches: deps.watches ?? createWatchSlots("console_watch", { perUser: consoleWatchesPerUser, total: consoleWatchesInTotal }, "live consoles"),
  };
}
