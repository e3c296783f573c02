/**
 * PLANS: the plans and their limits, as JSON. A plan must name its server and Game OAuth client
 * limits; the limits added later may be left out, so a PLANS written before them keeps working.
 */
import type { PlanLimits } from "../core/deps.ts";
import { ConfigError } from "./config-error.ts";
import type { Parser } from "./config-parsers.ts";

/** The hourly email cap of a plan whose PLANS entry does not name one. */
export const defaultEmailsPerHour = 30;

/** The note limit of a plan whose PLANS entry does not name one (entries written before notes existed). */
export const defaultNoteLimit = 1000;

/** The limits a plan must name in PLANS, and those it may leave out (then the value here applies). */
const requiredPlanLimits = ["servers", "gameOAuthClients"] as const;
const optionalPlanLimits = {
  notes: defaultNoteLimit,
  assistantQueriesPerDay: 50,
  assistantToolActionsPerDay: 20,
  /** Low: alert email is for an organization's own people, a few alerts an hour (core/integrations/email-cap.ts). */
  emailsPerHour: defaultEmailsPerHour,
};
const planLimitNames = [...requiredPlanLimits, ...Object.keys(optionalPlanLimits)].sort() as Array<keyof PlanLimits>;

/** The plans by name, each frozen; the table has no prototype, so a plan named like one of Object's properties is just a name. */
export const plans: Parser<Readonly<Record<string, PlanLimits>>> = (raw, name) => {
  const shape = `${name} must be JSON like {"free":{"servers":3,"gameOAuthClients":2,"notes":50}} (notes, the assistant's limits and emailsPerHour optional)`;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new ConfigError(`${shape} (it is not JSON)`);
  }
  if (!parsed || typeof parsed !== "object" || Array.isArray(parsed) || Object.keys(parsed).length === 0) {
    throw new ConfigError(`${shape} (got ${raw})`);
  }
  const result: Record<string, PlanLimits> = Object.create(null);
  for (const [plan, given] of Object.entries(parsed)) {
    const limits = given && typeof given === "object" && !Array.isArray(given) ? { ...optionalPlanLimits, ...given } : undefined;
    const ok =
      /^[a-z0-9_-]{1,40}$/.test(plan) &&
      limits &&
      Object.keys(limits).sort().join() === planLimitNames.join() &&
      planLimitNames.every((key) => Number.isInteger(limits[key]) && limits[key] >= 0 && limits[key] <= 100000);
    if (!ok) throw new ConfigError(`${shape}; plan "${plan}" is not (limits are whole numbers from 0 to 100000)`);
    result[plan] = Object.freeze(Object.fromEntries(planLimitNames.map((key) => [key, limits[key]])) as unknown as PlanLimits);
  }
  return Object.freeze(result);
};
