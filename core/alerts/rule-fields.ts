/**
 * An alert rule's fields: the request's spec checked against the organization (its server, its
 * integrations, a real time zone) and turned into columns, and a row turned back into the proto.
 */
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { EntityManager } from "@mikro-orm/postgresql";
import { ActivityKind, ActivitySeverity } from "../../gen/outpost/activity/v1/activity_service_pb.js";
import { AlertRuleSchema, type AlertRule as AlertRuleProto, type AlertRuleSpec } from "../../gen/outpost/alerts/v1/alerts_service_pb.js";
import type { AlertRule } from "../db/alert-entities.ts";
import { Server } from "../db/entities.ts";
import { inTransaction } from "../db/sql.ts";
import { fieldFail } from "../errors.ts";
import { countOrganizationIntegrations } from "./alert-queries.ts";
import { isTimeZone } from "./quiet-hours.ts";

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
  return {
    integrationIds: ids,
    columns: {
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
    },
    createdAt: timestampFromDate(row.createdAt),
    updatedAt: timestampFromDate(row.updatedAt),
  });
}
