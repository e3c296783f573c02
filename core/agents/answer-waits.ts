/**
 * What core asks one agent stream and waits for by request id (a console command's ConsoleResult,
 * a file operation's FileResult): each ask waits at most its timeout; when the stream ends, every
 * ask still waiting fails at once, never hangs; and only so many may wait at once per stream.
 */
import { DomainError, fail } from "../errors.ts";

/** Why an ask got no answer: the stream ended, it took too long, or too many were waiting. */
export class AgentUnanswered extends Error {
  readonly outcome: "offline" | "timeout" | "busy";
  /** Whether the ask went to the agent before this (false: it cannot have been acted on). */
  readonly sent: boolean;

  constructor(outcome: "offline" | "timeout" | "busy", sent = true) {
    super(`the agent did not answer: ${outcome}`);
    this.name = "AgentUnanswered";
    this.outcome = outcome;
    this.sent = sent;
  }
}

export interface AnswerWaits<T> {
  /**
   * Calls `send` and resolves with the answer to `requestId`; rejects {@link AgentUnanswered}
   * when the stream has ended or ends first, no answer comes within `timeoutMs`, or `limit` asks
   * already wait (or this id does).
   */
  ask(requestId: string, timeoutMs: number, send: () => void): Promise<T>;
  /** An answer arrived: settles its ask; false (and nothing else) when no ask waits for it. */
  answer(requestId: string, value: T): boolean;
  /** The stream ended: every waiting ask fails with "offline", and so does any later one. */
  close(): void;
}

export function createAnswerWaits<T>(limit: number): AnswerWaits<T> {
  const waiting = new Map<string, { resolve(value: T): void; reject(error: AgentUnanswered): void }>();
  let closed = false;
  return {
    ask(requestId, timeoutMs, send) {
      if (closed) return Promise.reject(new AgentUnanswered("offline", false));
      if (waiting.size >= limit || waiting.has(requestId)) return Promise.reject(new AgentUnanswered("busy", false));
      return new Promise<T>((resolve, reject) => {
        const timer = setTimeout(() => settle(() => reject(new AgentUnanswered("timeout"))), timeoutMs);
        const settle = (then: () => void) => {
          clearTimeout(timer);
          waiting.delete(requestId);
          then();
        };
        waiting.set(requestId, {
          resolve: (value) => settle(() => resolve(value)),
          reject: (error) => settle(() => reject(error)),
        });
        send();
      });
    },
    answer(requestId, value) {
      const waiter = waiting.get(requestId);
      waiter?.resolve(value);
      return waiter !== undefined;
    },
    close() {
      closed = true;
      for (const entry of [...waiting.values()]) entry.reject(new AgentUnanswered("offline"));
    },
  };
}

/**
 * What a caller hears of an ask its agent did not answer: `outcome_unknown` (504) when it was
 * sent (after `timeoutMs`, or the agent went away first), so it may have been acted on, and
 * `unknown` says so in `what`'s words; `agent_offline` (409) when it never reached the agent;
 * `server_busy` (429) when too many of `what` were waiting.
 */
export function unansweredRefusal(outcome: AgentUnanswered["outcome"], sent: boolean, timeoutMs: number, what: { many: string; unknown: string }): DomainError {
  if (outcome === "busy") return new DomainError("server_busy", `too many ${what.many} are waiting for this server's agent; try again in a moment`);
  if (outcome === "timeout") return new DomainError("outcome_unknown", `the agent did not answer within ${timeoutMs / 1000} seconds: ${what.unknown}`);
  if (sent) return new DomainError("outcome_unknown", `the server's agent went offline before it answered: ${what.unknown}`);
  return fail("agent_offline", "the server's agent is offline");
}
