/**
 * Events that anyone can cause by trying (an in-game sign-in refused, a rate limit locking
 * someone out) are written through here: each counts against its subject's `activity_event`
 * limit (core/ratelimit/policies.ts), and past it the event is dropped, so an attacker cannot
 * flood the log or the alerts that will follow it. They are written on their own, at once
 * (the activity writer, together with others written at that moment): they change nothing else. Writing one never changes the caller's answer:
 * a failure is logged, not thrown.
 */
import type { CoreDeps } from "../deps.ts";
import type { ActivityFacts } from "./record.ts";

type Deps = Pick<CoreDeps, "rateLimits" | "activity" | "logger">;

/**
 * Writes the event unless `subject` (e.g. "sign_in_refused:<server id>") has had its share in
 * the current window. True when it was written.
 */
export async function appendThrottled(deps: Deps, subject: string, actor: "system" | "agent", facts: ActivityFacts): Promise<boolean> {
  try {
    const decision = await deps.rateLimits.activityEvents.consume(subject);
    if (!decision.allowed) return false;
    await deps.activity.append(actor, facts);
    return true;
  } catch (error) {
    deps.logger.warn({ err: error, action: facts.action }, "an activity event could not be written");
    return false;
  }
}
