/**
 * The alerts' SQL: a rule's integrations, the outbox's claim (FOR UPDATE SKIP LOCKED, moving the
 * row's due time past a lease in the same statement), the hourly cap's count, outcomes, and the
 * deliveries' list. The outbox rows themselves are written by the `alert_match` trigger
 * (migration 0028), in the transaction of the event they are for.
 */
import { empty, sql, type SqlRunner } from "../db/sql.ts";
import { int, nullable, oneOf, row, text, textRecord, timestamp, type Row } from "../db/rows.ts";

/** Replaces the rule's integrations (their ids were checked to be the rule's organization's). */
export async function setRuleIntegrations(query: SqlRunner, ruleId: string, integrationIds: readonly string[]): Promise<void> {
  await query.run(sql`delete from alert_rule_integrations where rule_id = ${ruleId}`);
  if (integrationIds.length) {
    await query.run(sql`insert into alert_rule_integrations (rule_id, integration_id) select ${ruleId}::uuid, unnest(${integrationIds}::uuid[])`);
  }
}

const ruleIntegrationRow = row({ rule_id: text, integration_id: text });

/** Each rule's integration ids. */
export async function ruleIntegrations(query: SqlRunner, ruleIds: readonly string[]): Promise<Map<string, string[]>> {
  const rows = ruleIds.length
    ? await query.rows(
        sql`select rule_id, integration_id from alert_rule_integrations where rule_id = any(${ruleIds}::uuid[]) order by integration_id`,
        ruleIntegrationRow,
      )
    : [];
  const byRule = new Map<string, string[]>();
  for (const row of rows) byRule.set(row.rule_id, [...(byRule.get(row.rule_id) ?? []), row.integration_id]);
  return byRule;
}

/** How many of these ids are integrations of the organization. */
export async function countOrganizationIntegrations(query: SqlRunner, organizationId: string, ids: readonly string[]): Promise<number> {
  const found = await query.one(sql`select count(*) as n from integrations where organization_id = ${organizationId} and id = any(${ids}::uuid[])`, row({ n: int }));
  return found?.n ?? 0;
}

/**
 * A delivery's columns, each with its decoder. Statements name these columns rather than `d.*`:
 * a named prepared statement's result columns are fixed, so a column a later migration adds would
 * fail an older instance's statements during a rolling upgrade ("cached plan must not change result type").
 */
const deliveryFields = {
  id: text,
  rule_id: text,
  organization_id: text,
  integration_id: nullable(text),
  event_id: text,
  status: oneOf("pending", "delivered", "failed", "refused"),
  attempts: int,
  last_status: int,
  last_error: text,
  next_attempt_at: timestamp,
  lease_until: nullable(timestamp),
  delivered_at: nullable(timestamp),
  summary_id: nullable(text),
  created_at: timestamp,
};
/** {@link deliveryFields}' columns of `alert_deliveries d`. */
const deliveryColumns = sql`d.id, d.rule_id, d.organization_id, d.integration_id, d.event_id, d.status, d.attempts, d.last_status, d.last_error, d.next_attempt_at, d.lease_until, d.delivered_at, d.summary_id, d.created_at`;
const deliveryRow = row(deliveryFields);
export type DeliveryRow = Row<typeof deliveryRow>;

/**
 * Claims up to `limit` due deliveries for this instance until `leaseUntil`: one statement (its own
 * short transaction), so another instance skips them while they are sent, and sees them due again
 * if this one dies before recording an outcome.
 */
export function claimDue(query: SqlRunner, now: Date, leaseUntil: Date, limit: number): Promise<DeliveryRow[]> {
  return query.rows(
    sql`with due as (
          select id from alert_deliveries
          where status = 'pending' and next_attempt_at <= ${now}
          order by next_attempt_at, id limit ${limit}
          for update skip locked)
        update alert_deliveries d set next_attempt_at = ${leaseUntil}, lease_until = ${leaseUntil}
        from due where d.id = due.id
        returning ${deliveryColumns}`,
    deliveryRow,
  );
}

const sentRow = row({ count: int, oldest: nullable(timestamp) });

/** Sends to this rule's target since `since` (a summary counts once), and the oldest of them. */
export async function sentSince(query: SqlRunner, ruleId: string, integrationId: string | null, since: Date): Promise<Row<typeof sentRow>> {
  const found = await query.one(
    sql`select count(*) as count, min(delivered_at) as oldest from alert_deliveries
         where rule_id = ${ruleId} and integration_id is not distinct from ${integrationId}::uuid and delivered_at > ${since}
           and (summary_id is null or summary_id = id)`,
    sentRow,
  );
  return found ?? { count: 0, oldest: null };
}

/** Puts claimed deliveries back, due at `at` (quiet hours, the cap), without counting an attempt. */
export async function postpone(query: SqlRunner, ids: readonly string[], at: Date): Promise<void> {
  await query.run(sql`update alert_deliveries set next_attempt_at = ${at}, lease_until = null where id = any(${ids}::uuid[]) and status = 'pending'`);
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
export async function recordOutcomes(query: SqlRunner, outcomes: ReadonlyArray<{ ids: readonly string[] } & Outcome>): Promise<void> {
  if (!outcomes.length) return;
  const rows = outcomes.flatMap((o) =>
    o.ids.map((id) => ({
      id,
      status: o.status,
      http: o.httpStatus,
      error: o.error.slice(0, 1000),
      next: o.nextAttemptAt.toISOString(),
      delivered: o.deliveredAt?.toISOString() ?? null,
      summary: o.summaryId,
    })),
  );
  await query.run(
    sql`update alert_deliveries d set status = o.status, attempts = d.attempts + 1, last_status = o.http, last_error = o.error,
          next_attempt_at = o.next, lease_until = null, delivered_at = o.delivered, summary_id = o.summary
        from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as o(id uuid, status text, http int, error text, next timestamptz, delivered timestamptz, summary uuid)
        where d.id = o.id`,
  );
}

const eventRow = row({
  id: text,
  action: text,
  kind: text,
  severity: text,
  server_id: nullable(text),
  target_type: text,
  target_id: text,
  actor_email: nullable(text),
  details: textRecord,
  created_at: timestamp,
});
export type EventRow = Row<typeof eventRow>;

export async function eventsById(query: SqlRunner, ids: readonly string[]): Promise<Map<string, EventRow>> {
  const rows = await query.rows(
    sql`select id, action, kind, severity, server_id, target_type, target_id, actor_email, details, created_at from activity_events where id = any(${ids}::uuid[])`,
    eventRow,
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

const listedRow = row({ ...deliveryFields, action: text });

/** A page of the organization's deliveries, newest first (keyset on created_at, id), with each event's action. */
export function listDeliveries(query: SqlRunner, page: DeliveryPage): Promise<Array<Row<typeof listedRow>>> {
  return query.rows(
    sql`select ${deliveryColumns}, e.action
          from alert_deliveries d join activity_events e on e.id = d.event_id
         where d.organization_id = ${page.organizationId}
           ${page.ruleId === undefined ? empty : sql`and d.rule_id = ${page.ruleId}::uuid`}
           ${page.status === undefined ? empty : sql`and d.status = ${page.status}`}
           ${page.after === undefined ? empty : sql`and (d.created_at, d.id) < (${page.after.createdAt}::timestamptz, ${page.after.id}::uuid)`}
         order by d.created_at desc, d.id desc limit ${page.limit}`,
    listedRow,
  );
}

const heldRow = row({ summary_id: text, next_attempt_at: timestamp });

/** The summary this rule's target is already holding deliveries for, if any (its id and when it is due). */
export function heldSummary(query: SqlRunner, ruleId: string, integrationId: string | null): Promise<Row<typeof heldRow> | undefined> {
  return query.one(
    sql`select summary_id, next_attempt_at from alert_deliveries
         where rule_id = ${ruleId} and integration_id is not distinct from ${integrationId}::uuid and status = 'pending' and summary_id is not null
         order by created_at limit 1`,
    heldRow,
  );
}

/** Holds deliveries past the hourly cap: they join the summary `summaryId`, due at `at`. */
export async function hold(query: SqlRunner, ids: readonly string[], summaryId: string, at: Date): Promise<void> {
  await query.run(sql`update alert_deliveries set summary_id = ${summaryId}, next_attempt_at = ${at}, lease_until = null where id = any(${ids}::uuid[])`);
}
