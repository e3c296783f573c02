/**
 * An alert rule's fields: the request's spec checked against the organization (its server, its
 * integrations, a real time zone) and turned into columns, and a row turned back into the proto.
 */
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { EntityManager } from "@mikro-orm/postgresql";
import { ActivityKind, ActivitySeverity } from "../../gen/outpost/activity/v1/activity_service_pb.js";
import { AlertCondition, AlertRuleSchema, type AlertRule as AlertRuleProto, type AlertRuleSpec } from "../../gen/outpost/alerts/v1/alerts_service_pb.js";
import type { AlertRule } from "../db/alert-entities.ts";
import { Server } from "../db/entities.ts";
import { inTransaction } from "../db/sql.ts";
import { fieldFail } from "../errors.ts";
import { countOrganizationIntegrations } from "./alert-queries.ts";
import { isTimeZone } from "./quiet-hours.ts";
import type { Condition, Threshold } from "./thresholds.ts";

/** The hourly cap when a rule names none. */
export const defaultMaxPerHour = 20;

const nameOf = (e: Record<number, string>, value: number) => e[value].toLowerCase();
const valueOf = (e: Record<string, string | number>, name: string) => Number(e[name.toUpperCase()] ?? 0);

export interface RuleColumns {
  name: string;
  enabled: boolean;
  serverId: string | null;
  kinds: string[];
  severities: string[];
  notifyDashboard: boolean;
  quietStart: string | null;
  quietEnd: string | null;
  quietTimeZone: string | null;
  maxPerHour: number;
  threshold: Threshold | null;
}

/** What each condition takes: a value within this range (none: 0), and minutes (or none). */
const conditionRules: Record<Condition, { value?: [number, number]; minutes: boolean }> = {
  tps_below: { value: [0.1, 20], minutes: true },
  memory_above_percent: { value: [1, 100], minutes: true },
  crash_loop: { minutes: false },
  stopped_unexpectedly: { minutes: false },
  no_samples: { minutes: true },
};

/** The threshold's columns, or its refusal by field. */
function checkThreshold(spec: AlertRuleSpec): Threshold | null {
  const t = spec.threshold;
  if (!t) return null;
  if (spec.kinds.length || spec.severities.length) {
    throw fieldFail([{ field: "spec.kinds", message: "a rule with a threshold matches its own events only: leave kinds and severities empty" }]);
  }
  const condition = nameOf(AlertCondition, t.condition) as Condition;
  const rules = conditionRules[condition];
  const [low, high] = rules.value ?? [0, 0];
  if (rules.value ? t.value < low || t.value > high : t.value !== 0) {
    throw fieldFail([{ field: "spec.threshold.value", message: rules.value ? `must be from ${low} to ${high} for ${condition}` : `must be 0 for ${condition}` }]);
  }
  if (rules.minutes ? t.minutes < 1 : t.minutes !== 0) {
    throw fieldFail([{ field: "spec.threshold.minutes", message: rules.minutes ? `must be from 1 to 1440 for ${condition}` : `must be 0 for ${condition}` }]);
  }
  return { condition, value: t.value, minutes: t.minutes };
}

/** Checks `spec` against the organization and returns the rule's columns and integration ids. */
export async function checkSpec(tx: EntityManager, organizationId: string, spec: AlertRuleSpec): Promise<{ columns: RuleColumns; integrationIds: string[] }> {
  const quiet = spec.quietHours;
  if (quiet && !isTimeZone(quiet.timeZone)) {
    throw fieldFail([{ field: "spec.quiet_hours.time_zone", message: `"${quiet.timeZone}" is not an IANA time zone (e.g. "Europe/Paris")` }]);
  }
  if (quiet && quiet.start === quiet.end) throw fieldFail([{ field: "spec.quiet_hours.end", message: "the window must not be empty: end must differ from start" }]);
  if (spec.serverId !== undefined && !(await tx.count(Server, { id: spec.serverId, organization: organizationId }))) {
    throw fieldFail([{ field: "spec.server_id", message: "no server with this id in the organization" }]);
  }
  const ids = [...spec.integrationIds];
  if (ids.length && (await countOrganizationIntegrations(inTransaction(tx), organizationId, ids)) !== ids.length) {
    throw fieldFail([{ field: "spec.integration_ids", message: "every id must be an integration of the organization" }]);
  }
  const threshold = checkThreshold(spec);
  return {
    integrationIds: ids,
    columns: {
      threshold,
      name: spec.name,
      enabled: spec.enabled,
      serverId: spec.serverId ?? null,
      kinds: spec.kinds.map((k) => nameOf(ActivityKind, k)),
      severities: spec.severities.map((s) => nameOf(ActivitySeverity, s)),
      notifyDashboard: spec.notifyDashboard,
      quietStart: quiet?.start ?? null,
      quietEnd: quiet?.end ?? null,
      quietTimeZone: quiet?.timeZone ?? null,
      maxPerHour: spec.maxDeliveriesPerHour || defaultMaxPerHour,
    },
  };
}

export function ruleToProto(row: AlertRule, integrationIds: readonly string[]): AlertRuleProto {
  return create(AlertRuleSchema, {
    id: row.id,
    organizationId: row.organization.id,
    spec: {
      name: row.name,
      enabled: row.enabled,
      serverId: row.serverId ?? undefined,
      kinds: row.kinds.map((k) => valueOf(ActivityKind, k)),
      severities: row.severities.map((s) => valueOf(ActivitySeverity, s)),
      integrationIds: [...integrationIds],
      notifyDashboard: row.notifyDashboard,
      quietHours: row.quietStart && row.quietEnd && row.quietTimeZone ? { start: row.quietStart, end: row.quietEnd, timeZone: row.quietTimeZone } : undefined,
      maxDeliveriesPerHour: row.maxPerHour,
      threshold: row.threshold ? { condition: valueOf(AlertCondition, row.threshold.condition), value: row.threshold.value, minutes: row.threshold.minutes } : undefined,
    },
    createdAt: timestampFromDate(row.createdAt),
    updatedAt: timestampFromDate(row.updatedAt),
  });
}
