/**
 * Alert rules (issue 15). A rule's integrations are rows of `alert_rule_integrations` and its
 * deliveries rows of `alert_deliveries`, both written as plain SQL (core/alerts/alert-queries.ts),
 * and matched by the `alert_match` trigger (migration 0028, replacing 0019's).
 */
import { randomUUID } from "node:crypto";
import { defineEntity, p, type InferEntity } from "@mikro-orm/core";
import { Organization } from "./entities.ts";

export const AlertRule = defineEntity({
  name: "AlertRule",
  tableName: "alert_rules",
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => randomUUID()),
    organization: () => p.manyToOne(Organization).deleteRule("cascade"),
    name: p.string().length(80),
    enabled: p.boolean().default(true),
    /** Only events about this server (null: any). */
    serverId: p.uuid().nullable(),
    /** Kind names ("status"…); empty: every kind. */
    kinds: p.json<string[]>(),
    /** Severity names; empty: every severity. */
    severities: p.json<string[]>(),
    notifyDashboard: p.boolean().default(false),
    quietStart: p.string().length(5).nullable(),
    quietEnd: p.string().length(5).nullable(),
    quietTimeZone: p.string().length(64).nullable(),
    maxPerHour: p.integer().default(20),
    /** A condition on its servers instead of matching events (core/alerts/thresholds.ts); null: none. */
    threshold: p.json<{ condition: string; value: number; minutes: number }>().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()),
  },
});
export type AlertRule = InferEntity<typeof AlertRule>;

export const alertEntities = [AlertRule];
