/**
 * Long watches open on this instance, kept bounded: each holds a stream and a bus subscription for
 * as long as a dashboard page stays open (a live console, a notification bell), so one user gets at
 * most `perUser` of a kind and the instance `total`.
 */
import type { RateLimitPolicy } from "./ratelimit/policies.ts";
import { rateLimited } from "./ratelimit/rate-limited.ts";

/** What a refused watch is told: a slot frees when a page closes. */
const retryAfterSeconds = 30;

export interface WatchSlots {
  /** Takes a slot for the user's watch; returns its release (idempotent). Throws `rate_limited` when full. */
  open(userId: string): () => void;
}

export interface WatchSlotLimits {
  perUser: number;
  total: number;
}

/**
 * Slots of one kind of watch. `name` prefixes the refusals' policy names (`<name>_user`,
 * `<name>_instance`); `what` names the watches in their messages, e.g. "live consoles".
 */
export function createWatchSlots(name: string, limits: WatchSlotLimits, what: string): WatchSlots {
  const byUser = new Map<string, number>();
  let total = 0;
  const policy = (suffix: string, limit: number): RateLimitPolicy => ({ name: `${name}_${suffix}`, limit, windowSeconds: retryAfterSeconds });
  return {
    open(userId) {
      const held = byUser.get(userId) ?? 0;
      if (held >= limits.perUser) {
        throw rateLimited(policy("user", limits.perUser), retryAfterSeconds, `you have ${limits.perUser} ${what} open; close one and try again`);
      }
      if (total >= limits.total) {
        throw rateLimited(policy("instance", limits.total), retryAfterSeconds, `too many ${what} are open on this instance; try again in a moment`);
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
