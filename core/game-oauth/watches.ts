/**
 * The hosted pages' live-status watches open on this instance (WatchAuthorization), kept bounded:
 * one per sign-in session, and at most {@link watchesPerClientIp} per client address.
 *
 * A newer watch of a session replaces the older one rather than being refused: a page's
 * EventSource reconnects by itself after a network drop, often before this side notices that the
 * old connection is dead (a half-open TCP connection, a proxy holding it), and refusing would
 * shut the live page out until then. The page that is replaced is told so, and stops.
 */
import type { RateLimitPolicy } from "../ratelimit/policies.ts";
import { rateLimited } from "../ratelimit/rate-limited.ts";

/** Open watches (event streams) one client address may hold on one instance. */
export const watchesPerClientIp = 20;

/** What a refused watch is told: a stream frees its slot when it ends, at the latest when its 10-minute session does. */
const retryAfterSeconds = 30;

export interface Watch {
  /** True once a newer watch of the same session has taken over. */
  readonly replaced: boolean;
  /** Gives the slot back; the watch's session may be watched again. Idempotent. */
  close(): void;
}

export interface WatchRegistry {
  /**
   * Registers a watch of `sessionId` from `address` (a client-address key; one bucket for calls
   * that name none). Replaces the session's earlier watch, calling its `onReplaced`. Throws
   * `rate_limited` when the address already holds its limit of other watches.
   */
  open(sessionId: string, address: string, onReplaced: () => void): Watch;
  /** Open watches of an address (for tests and logs). */
  count(address: string): number;
}

interface Entry {
  address: string;
  replaced: boolean;
  onReplaced: () => void;
  closed: boolean;
}

export function createWatchRegistry(limit = watchesPerClientIp): WatchRegistry {
  const policy: RateLimitPolicy = { name: "authorization_watch_ip", limit, windowSeconds: retryAfterSeconds };
  const bySession = new Map<string, Entry>();
  const byAddress = new Map<string, number>();

  function release(sessionId: string, entry: Entry): void {
    if (entry.closed) return;
    entry.closed = true;
    if (bySession.get(sessionId) === entry) bySession.delete(sessionId);
    const left = (byAddress.get(entry.address) ?? 1) - 1;
    if (left > 0) byAddress.set(entry.address, left);
    else byAddress.delete(entry.address);
  }

  return {
    open(sessionId, address, onReplaced) {
      const previous = bySession.get(sessionId);
      const held = (byAddress.get(address) ?? 0) - (previous?.address === address ? 1 : 0);
      if (held >= limit) {
        throw rateLimited(policy, retryAfterSeconds, `too many live sign-in pages open from your address (${limit}); close some and try again`);
      }
      if (previous) {
        release(sessionId, previous);
        previous.replaced = true;
        previous.onReplaced();
      }
      const entry: Entry = { address, replaced: false, onReplaced, closed: false };
      bySession.set(sessionId, entry);
      byAddress.set(address, (byAddress.get(address) ?? 0) + 1);
      return {
        get replaced() {
          return entry.replaced;
        },
        close: () => release(sessionId, entry),
      };
    },
    count: (address) => byAddress.get(address) ?? 0,
  };
}
