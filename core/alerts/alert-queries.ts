/**
 * The alerts' SQL (`?` placeholders, as every Query takes): a rule's integrations, the outbox's claim (FOR UPDATE SKIP LOCKED, moving the
 * row's due time past a lease in the same statement), the hourly cap's count, outcomes, and the
 * deliveries' list. The outbox rows themselves are written by the `alert_match` trigger
 * (migration 0028), in the transaction of the event they are for.
 */
import type { Query } from "../db/statements.ts";

/** Replaces the rule's integrations (their ids were checked to be the rule's organization's). */
export async function setRuleIntegrations(query: Query, ruleId: string, integrationIds: readonly string[]): Promise<void> {
  await query(`delete from alert_rule_integrations where rule_id = ?`, [ruleId]);
  if (integrationIds.length) {
    await query(`insert into alert_rule_integrations (rule_id, integration_id) select ?, unnest(string_to_array(?, ',')::uuid[])`, [ruleId, integrationIds.join(",")]);
  }
}

/** Each rule's integration ids. */
export async function ruleIntegrations(query: Query, ruleIds: readonly string[]): Promise<Map<string, string[]>> {
  const rows = ruleIds.length
    ? await query<{ rule_id: string; integration_id: string }>(`select rule_id, integration_id from alert_rule_integrations where rule_id = any(string_to_array(?, ',')::uuid[]) order by integration_id`, [ruleIds.join(",")])
    : [];
  const byRule = new Map<string, string[]>();
  for (const row of rows) byRule.set(row.rule_id, [...(byRule.get(row.rule_id) ?? []), row.integration_id]);
  return byRule;
}

/** How many of these ids are integrations of the organization. */
export async function countOrganizationIntegrations(query: Query, organizationId: string, ids: readonly string[]): Promise<number> {
  const [row] = await query<{ n: number }>(`select count(*)::int as n from integrations where organization_id = ? and id = any(string_to_array(?, ',')::uuid[])`, [organizationId, ids.join(",")]);
  return row.n;
}

export interface DeliveryRow {
  id: string;
  rule_id: string;
  organization_id: string;
  integration_id: string | null;
  event_id: string;
  status: "pending" | "delivered" | "failed" | "refused";
  attempts: number;
  last_status: number;
  last_error: string;
  next_attempt_at: Date;
  lease_until: Date | null;
  delivered_at: Date | null;
  summary_id: string | null;
  created_at: Date;
}

/**
 * Claims up to `limit` due deliveries for this instance until `leaseUntil`: one statement (its own
 * short transaction), so another instance skips them while they are sent, and sees them due again
 * if this one dies before recording an outcome.
 */
export async function claimDue(query: Query, now: Date, leaseUntil: Date, limit: number): Promise<DeliveryRow[]> {
  return query<DeliveryRow>(
    `with due as (
       select id from alert_deliveries
       where status = 'pending' and next_attempt_at <= ?
       order by next_attempt_at, id limit ?
       for update skip locked)
     update alert_deliveries d set next_attempt_at = ?, lease_until = ?
     from due where d.id = due.id
     returning d.*`,
    [now, limit, leaseUntil, leaseUntil],
  );
}

/** Sends to this rule's target since `since` (a summary counts once), and the oldest of them. */
export async function sentSince(query: Query, ruleId: string, integrationId: string | null, since: Date): Promise<{ count: number; oldest: Date | null }> {
  const [row] = await query<{ count: number; oldest: Date | null }>(
    `select count(*)::int as count, min(delivered_at) as oldest from alert_deliveries
     where rule_id = ? and integration_id is not distinct from ?::uuid and delivered_at > ?
       and (summary_id is null or summary_id = id)`,
    [ruleId, integrationId, since],
  );
  return row;
}

/** Puts claimed deliveries back, due at `at` (quiet hours, the cap), without counting an attempt. */
export async function postpone(query: Query, ids: readonly string[], at: Date): Promise<void> {
  await query(`update alert_deliveries set next_attempt_at = ?, lease_until = null where id = any(string_to_array(?, ',')::uuid[]) and status = 'pending'`, [at, ids.join(",")]);
}

export interface Outcome {
  status: "pending" | "delivered" | "failed" | "refused";
  httpStatus: number;
  error: string;
  nextAttemptAt: Date;
  deliveredAt: Date | null;
  summaryId: string | null;
}

/**
 * Records attempts' outcomes, each on the deliveries sent together (one, or a summary's), in one
 * statement for a whole round of a target (a round trip per send would cap the rate at the pool's).
 */
export async function recordOutcomes(query: Query, outcomes: ReadonlyArray<{ ids: readonly string[] } & Outcome>): Promise<void> {
  if (!outcomes.length) return;
  const rows = outcomes.flatMap((o) =>
    o.ids.map((id) => ({ id, status: o.status, http: o.httpStatus, error: o.error.slice(0, 1000), next: o.nextAttemptAt.toISOString(), delivered: o.deliveredAt?.toISOString() ?? null, summary: o.summaryId })),
  );
  await query(
    `update alert_deliveries d set status = o.status, attempts = d.attempts + 1, last_status = o.http, last_error = o.error,
       next_attempt_at = o.next, lease_until = null, delivered_at = o.delivered, summary_id = o.summary
     from jsonb_to_recordset(?::jsonb) as o(id uuid, status text, http int, error text, next timestamptz, delivered timestamptz, summary uuid)
     where d.id = o.id`,
    [JSON.stringify(rows)],
  );
}

export interface EventRow {
  id: string;
  action: string;
  kind: string;
  severity: string;
  server_id: string | null;
  target_type: string;
  target_id: string;
  actor_email: string | null;
  details: Record<string, string>;
  created_at: Date;
}

export async function eventsById(query: Query, ids: readonly string[]): Promise<Map<string, EventRow>> {
  const rows = await query<EventRow>(
    `select id, action, kind, severity, server_id, target_type, target_id, actor_email, details, created_at from activity_events where id = any(string_to_array(?, ',')::uuid[])`,
    [ids.join(",")],
  );
  return new Map(rows.map((row) => [row.id, row]));
}

export interface DeliveryPage {
  organizationId: string;
  ruleId?: string;
  status?: string;
  limit: number;
  after?: { createdAt: Date; id: string };
}

/** A page of the organization's deliveries, newest first (keyset on created_at, id), with each event's action. */
export async function listDeliveries(query: Query, page: DeliveryPage): Promise<Array<DeliveryRow & { action: string }>> {
  return query<DeliveryRow & { action: string }>(
    `select d.*, e.action from alert_deliveries d join activity_events e on e.id = d.event_id
     where d.organization_id = ? and (?::uuid is null or d.rule_id = ?) and (?::text is null or d.status = ?)
       and (?::timestamptz is null or (d.created_at, d.id) < (?, ?::uuid))
     order by d.created_at desc, d.id desc limit ?`,
    [page.organizationId, page.ruleId ?? null, page.ruleId ?? null, page.status ?? null, page.status ?? null, page.after?.createdAt ?? null, page.after?.createdAt ?? null, page.after?.id ?? null, page.limit],
  );
}

/** The summary this rule's target is already holding deliveries for, if any (its id and when it is due). */
export async function heldSummary(query: Query, ruleId: string, integrationId: string | null): Promise<{ summary_id: string; next_attempt_at: Date } | undefined> {
  const [row] = await query<{ summary_id: string; next_attempt_at: Date }>(
    `select summary_id, next_attempt_at from alert_deliveries
     where rule_id = ? and integration_id is not distinct from ?::uuid and status = 'pending' and summary_id is not null
     order by created_at limit 1`,
    [ruleId, integrationId],
  );
  return row;
}

/** Holds deliveries past the hourly cap: they join the summary `summaryId`, due at `at`. */
export async function hold(query: Query, ids: readonly string[], summaryId: string, at: Date): Promise<void> {
  await query(`update alert_deliveries set summary_id = ?, next_attempt_at = ?, lease_until = null where id = any(string_to_array(?, ',')::uuid[])`, [summaryId, at, ids.join(",")]);
}
