/**
 * The plans PLANS configures, looked up by name. Access checks (core/access.ts), frozen servers
 * (core/servers/frozen.ts) and the platform admin's plan changes all read a plan; frozen.ts is
 * itself part of the access check, so the lookup lives below both.
 */
import type { PlanLimits } from "./deps.ts";

/** The limits of a plan PLANS configures, by its own names only ("constructor" is no plan), or undefined. */
export function configuredPlan(plans: Readonly<Record<string, PlanLimits>>, name: string): PlanLimits | undefined {
  return Object.hasOwn(plans, name) ? plans[name] : undefined;
}
