/**
 * Completion events of hosted sign-in sessions, so a page watching on one instance learns at once
 * that an agent on another instance claimed or completed its sign-in: one topic per session on
 * the instances' bus (core/bus.ts). Watchers also poll now and then (watch-authorization.ts), so
 * a lost event only delays the page.
 */
import type { Bus } from "../bus.ts";

export interface AuthorizationEvents {
  /** Tells every instance that the session changed (after the change is committed); settles within seconds. */
  publish(sessionId: string): Promise<void>;
  /** Calls `listener` whenever the session changes; returns the unsubscribe. */
  subscribe(sessionId: string, listener: () => void): () => void;
}

const topic = (sessionId: string) => `authorization:${sessionId}`;

export function authorizationEvents(bus: Bus): AuthorizationEvents {
  return {
    async publish(sessionId) {
      // Not sent to every instance: watchers elsewhere learn it at their next poll.
      await bus.publish(topic(sessionId));
    },
    subscribe: (sessionId, listener) => bus.subscribe(topic(sessionId), () => listener()),
  };
}
