/**
 * Rate-limit lockouts in the activity log: `rate_limit.locked_out`, once per lockout (the
 * request that first crossed a limit in its window, which the store counts exactly once across
 * instances: `consumed === limit + 1`), never per refused request. In the organization's log
 * when the limit counts something of an organization (its players' or servers' in-game codes),
 * else in the platform's. Written through {@link appendThrottled}, per limit and log, so keys an
 * attacker varies (addresses, invented players) cannot flood it either.
 */
import type { RateLimitPolicy } from "../ratelimit/policies.ts";
import { appendThrottled } from "./throttled.ts";
import type { CoreDeps } from "../deps.ts";

export type LockoutDeps = Pick<CoreDeps, "rateLimits" | "activity" | "logger">;

export interface Lockout {
  policy: RateLimitPolicy;
  retryAfterSeconds: number;
  organizationId?: string;
  serverId?: string;
  /** What was locked out, in words an operator can act on (an address, a player), never a secret. */
  details?: Record<string, string>;
}

export async function recordLockout(deps: LockoutDeps, lockout: Lockout): Promise<void> {
  const { policy } = lockout;
  await appendThrottled(deps, `lockout:${policy.name}:${lockout.organizationId ?? "platform"}`, "system", {
    action: "rate_limit.locked_out",
    organizationId: lockout.organizationId ?? null,
    serverId: lockout.serverId ?? null,
    targetType: "rate_limit",
    targetId: policy.name,
    details: {
      policy: policy.name,
      limit: String(policy.limit),
      windowSeconds: String(policy.windowSeconds),
      retryAfterSeconds: String(lockout.retryAfterSeconds),
      ...lockout.details,
    },
  });
}
