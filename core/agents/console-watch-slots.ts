/**
 * The live consoles (servers/watchConsole) open on this instance, kept bounded: each holds a
 * stream and a bus subscription for as long as a dashboard stays on a server's page, so one user
 * gets at most {@link watchesPerUser} and the instance {@link watchesInTotal}.
 */
import type { RateLimitPolicy } from "../ratelimit/policies.ts";
import { rateLimited } from "../ratelimit/rate-limited.ts";

export const watchesPerUser = 10;
export const watchesInTotal = 500;

/** What a refused watch is told: a slot frees when a console page closes. */
const retryAfterSeconds = 30;

export interface ConsoleWatchSlots {
  /** Takes a slot for the user's watch; returns its release (idempotent). Throws `rate_limited` when full. */
  open(userId: string): () => void;
}

export function createConsoleWatchSlots(limits = { perUser: watchesPerUser, total: watchesInTotal }): ConsoleWatchSlots {
  const byUser = new Map<string, number>();
  let total = 0;
  const policy = (name: string, limit: number): RateLimitPolicy => ({ name, limit, windowSeconds: retryAfterSeconds });
  return {
    open(userId) {
      const held = byUser.get(userId) ?? 0;
      if (held >= limits.perUser) {
        throw rateLimited(policy("console_watch_user", limits.perUser), retryAfterSeconds, `you have ${limits.perUser} live consoles open; close one and try again`);
      }
      if (total >= limits.total) {
        throw rateLimited(policy("console_watch_instance", limits.total), retryAfterSeconds, "too many live consoles are open on this instance; try again in a moment");
      }
      byUser.set(userId, held + 1);
      total++;
      let released = false;
      return () => {
        if (released) return;
        released = true;
        total--;
        const left = (byUser.get(userId) ?? 1) - 1;
        if (left > 0) byUser.set(userId, left);
        else byUser.delete(userId);
      };
    },
  };
}
