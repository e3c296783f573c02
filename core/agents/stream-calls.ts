/**
 * A question core asks the agent stream that holds a server, wherever that stream is open: directly
 * when it is open on this instance, otherwise over the bus to the instance that holds it (each
 * holding stream listens on a topic of its own, and answers on the question's). Addressing the
 * stream, not the server, means a stream that another took over answers nothing, even before it
 * learns so. The console's commands (console-router.ts) and the lifecycle's requests
 * (lifecycle-router.ts) go this way; both fit a bus message. File operations, which do not, have
 * file-router.ts.
 */
import type { Logger } from "pino";
import type { Bus } from "../bus.ts";
import type { AgentConnection, AgentConnections } from "./connections.ts";
import { AgentUnanswered } from "./answer-waits.ts";

/** What kind of question, and how to ask it of a stream open here. */
export interface StreamCallKind<Q, A> {
  /** Names the topics: `<name>:<connection id>` for questions, `<name>-result:<request id>` for answers. */
  name: string;
  /** Asks the stream; rejects {@link AgentUnanswered} as answer-waits.ts does. */
  ask(connection: AgentConnection, requestId: string, question: Q, timeoutMs: number): Promise<A>;
  /** A question that came over the bus, checked (undefined: not one). */
  readQuestion(value: unknown): Q | undefined;
  /** An answer that came over the bus, checked (undefined: not one). */
  readAnswer(value: unknown): A | undefined;
}

export interface StreamCalls<Q, A> {
  /**
   * Asks the stream `connectionId` and resolves with its answer; rejects {@link AgentUnanswered}
   * when the stream is gone or ends first ("offline"), no answer comes within `timeoutMs`
   * ("timeout"), or too many questions wait for that agent ("busy").
   */
  call(connectionId: string, requestId: string, question: Q, timeoutMs: number): Promise<A>;
  /** The stream holds its server now: questions from other instances reach it, until the returned detach. */
  attach(connection: AgentConnection): () => void;
}

/** How much longer the calling instance waits than the holding one, which answers within the timeout. */
const remoteMarginMs = 1_000;
/** The longest a question may wait: a bus message saying more is not one of ours. */
const maxTimeoutMs = 60_000;
const outcomes = new Set<string>(["offline", "timeout", "busy"]);

/** What the holding instance publishes: the answer, or why there is none. */
type Remote<A> = { answer: A } | { unanswered: AgentUnanswered["outcome"]; sent: boolean };

function parse(payload: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(payload);
    return typeof value === "object" && value !== null ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined; // Not ours, or damaged: as if nothing came.
  }
}

export function createStreamCalls<Q, A>(deps: { agents: AgentConnections; bus: Bus; logger: Logger }, kind: StreamCallKind<Q, A>): StreamCalls<Q, A> {
  const { bus } = deps;
  const questionTopic = (connectionId: string) => `${kind.name}:${connectionId}`;
  const answerTopic = (requestId: string) => `${kind.name}-result:${requestId}`;

  function readRemote(payload: string): Remote<A> | undefined {
    const value = parse(payload);
    if (!value) return undefined;
    if ("answer" in value) {
      const answer = kind.readAnswer(value.answer);
      return answer === undefined ? undefined : { answer };
    }
    if (typeof value.unanswered === "string" && outcomes.has(value.unanswered)) {
      return { unanswered: value.unanswered as AgentUnanswered["outcome"], sent: value.sent !== false };
    }
    return undefined;
  }

  /** On the holding instance: asks the question that came over the bus and publishes what it gave. */
  async function serve(connection: AgentConnection, payload: string): Promise<void> {
    const value = parse(payload);
    const { requestId, timeoutMs } = value ?? {};
    const question = value && kind.readQuestion(value.question);
    if (question === undefined || typeof requestId !== "string" || typeof timeoutMs !== "number" || !(timeoutMs > 0 && timeoutMs <= maxTimeoutMs)) return;
    let result: Remote<A>;
    try {
      result = { answer: await kind.ask(connection, requestId, question, timeoutMs) };
    } catch (error) {
      if (!(error instanceof AgentUnanswered)) throw error;
      result = { unanswered: error.outcome, sent: error.sent };
    }
    await bus.publish(answerTopic(requestId), JSON.stringify(result));
  }

  /** On the instance the call reached: publishes the question and waits for its answer. */
  function callRemote(connectionId: string, requestId: string, question: Q, timeoutMs: number): Promise<A> {
    return new Promise((resolve, reject) => {
      const done = (then: () => void) => {
        clearTimeout(timer);
        unsubscribe();
        then();
      };
      // The holding instance's stream times out as well, and then says so (or gives an answer that
      // came just in time): this is the bound should it never answer, a little later than its own.
      const timer = setTimeout(() => done(() => reject(new AgentUnanswered("timeout"))), timeoutMs + remoteMarginMs);
      const unsubscribe = bus.subscribe(answerTopic(requestId), (payload) => {
        const result = readRemote(payload);
        if (!result) return;
        done(() => ("answer" in result ? resolve(result.answer) : reject(new AgentUnanswered(result.unanswered, result.sent))));
      });
      bus.publish(questionTopic(connectionId), JSON.stringify({ requestId, timeoutMs, question })).catch((error) => done(() => reject(error)));
    });
  }

  return {
    call(connectionId, requestId, question, timeoutMs) {
      const local = deps.agents.holding(connectionId);
      if (local) return kind.ask(local, requestId, question, timeoutMs);
      // One process: a stream not here is no stream.
      if (!bus.shared) return Promise.reject(new AgentUnanswered("offline", false));
      return callRemote(connectionId, requestId, question, timeoutMs);
    },
    attach(connection) {
      return bus.subscribe(questionTopic(connection.id), (payload) => {
        serve(connection, payload).catch((error) =>
          deps.logger.error({ err: error, serverId: connection.serverId }, `answering a ${kind.name} from another instance failed`),
        );
      });
    },
  };
}
