/**
 * Sends the claimed deliveries of one rule's target (an integration, or the dashboard): holds them
 * through quiet hours, keeps to the rule's hourly cap (what is past it joins one summary, sent
 * when the hour allows), sends, and records each outcome with its retry (retry.ts).
 */
import type { EntityManager } from "@mikro-orm/postgresql";
import type { Integration } from "../db/integration-entities.ts";
import type { CoreDeps } from "../deps.ts";
import { deliverToIntegration, type DeliveryOutcome } from "../integrations/deliver.ts";
import type { OutgoingMessage } from "../integrations/payloads.ts";
import { notifyManagers } from "../notifications/notify.ts";
import { heldSummary, hold, postpone, recordOutcomes, sentSince, type DeliveryRow, type EventRow, type Outcome } from "./alert-queries.ts";
import { alertMessage, summaryMessage, type AlertContext } from "./messages.ts";
import { quietUntil } from "./quiet-hours.ts";
import { verdict, type RetryPolicy } from "./retry.ts";

export type SendDeps = Pick<CoreDeps, "outbound" | "mailer" | "keyEncryptionKey" | "notifier" | "clock" | "logger" | "orm" | "config" | "statements">;

export interface Group {
  context: AlertContext;
  /** Undefined for the dashboard. */
  integration: Integration | undefined;
  rows: DeliveryRow[];
  events: Map<string, EventRow>;
}

const hourMs = 3_600_000;
const time = (d: Date) => d.getTime();

/** An in-app notification to each owner and admin; the message id keeps a retry from repeating it. */
async function toDashboard(deps: SendDeps, em: EntityManager, context: AlertContext, message: OutgoingMessage): Promise<DeliveryOutcome> {
  const started = Date.now();
  const draft = {
    kind: "alert" as const,
    title: message.title,
    body: message.text,
    link: message.link,
    organizationId: context.organization.id,
    dedupeKey: `alert:${message.id}`,
  };
  deps.notifier.announce(await notifyManagers(deps.statements.on(em), draft, deps.clock.now()));
  return { ok: true, httpStatus: 0, error: "", retryable: false, durationMs: Date.now() - started };
}

async function attempt(deps: SendDeps, em: EntityManager, group: Group, message: OutgoingMessage): Promise<DeliveryOutcome> {
  if (!group.integration) return toDashboard(deps, em, group.context, message);
  if (!group.integration.enabled) return { ok: false, httpStatus: 0, error: "the integration is disabled", retryable: false, durationMs: 0 };
  return deliverToIntegration(deps, group.integration, message);
}

/** Sends `rows` as one message (a summary when they are several); returns the outcome to record on all. */
async function sendOne(deps: SendDeps, policy: RetryPolicy, em: EntityManager, group: Group, rows: DeliveryRow[]): Promise<{ ids: string[] } & Outcome> {
  const lead = rows[0];
  const events = rows.map((r) => group.events.get(r.event_id)).filter((e): e is EventRow => e !== undefined);
  const id = lead.summary_id ?? lead.id;
  const message = rows.length > 1 ? summaryMessage(id, group.context, events) : alertMessage(id, group.context, events[0]);
  let outcome: DeliveryOutcome;
  try {
    outcome = await attempt(deps, em, group, message);
  } catch (error) {
    deps.logger.warn({ err: error, deliveryId: lead.id }, "an alert delivery failed unexpectedly");
    outcome = { ok: false, httpStatus: 0, error: "unexpected failure", retryable: true, durationMs: 0 };
  }
  const now = deps.clock.now();
  const next = verdict(policy, outcome, lead.attempts + 1, lead.created_at, now);
  return {
    ids: rows.map((r) => r.id),
    status: next.status,
    httpStatus: outcome.httpStatus,
    error: outcome.error,
    nextAttemptAt: next.at,
    deliveredAt: next.status === "delivered" ? now : null,
    summaryId: lead.summary_id,
  };
}

/** Splits claimed rows into sends: each held summary is one, each other row one, oldest first. */
function sends(rows: DeliveryRow[]): DeliveryRow[][] {
  const summaries = new Map<string, DeliveryRow[]>();
  const singles: DeliveryRow[][] = [];
  for (const row of [...rows].sort((a, b) => time(a.created_at) - time(b.created_at))) {
    if (row.summary_id) summaries.set(row.summary_id, [...(summaries.get(row.summary_id) ?? []), row]);
    else singles.push([row]);
  }
  return [...summaries.values(), ...singles];
}

/** Quiet hours, then the cap, then the sends, one after another (a target gets its messages in order). */
export async function sendGroup(deps: SendDeps, policy: RetryPolicy, em: EntityManager, group: Group): Promise<void> {
  const query = deps.statements.on(em);
  const { rule } = group.context;
  const now = deps.clock.now();
  const ids = group.rows.map((r) => r.id);
  const quiet =
    rule.quietStart && rule.quietEnd && rule.quietTimeZone ? quietUntil({ start: rule.quietStart, end: rule.quietEnd, timeZone: rule.quietTimeZone }, now) : undefined;
  if (quiet) return postpone(query, ids, quiet);
  const integrationId = group.integration?.id ?? null;
  const sent = await sentSince(query, rule.id, integrationId, new Date(now.getTime() - hourMs));
  let slots = rule.maxPerHour - sent.count;
  const queue = sends(group.rows);
  // Outcomes are written together after the round: an instance that dies meanwhile leaves its
  // sends unrecorded, and they are sent again after the lease (at least once, the same ids).
  // They are also written every 10 s, well inside the lease, so slow targets are not sent twice.
  let outcomes = [];
  let written = Date.now();
  while (queue.length && slots > 0) {
    outcomes.push(await sendOne(deps, policy, em, group, queue.shift()!));
    slots--;
    if (Date.now() - written > 10_000) {
      await recordOutcomes(query, outcomes);
      outcomes = [];
      written = Date.now();
    }
  }
  await recordOutcomes(query, outcomes);
  const over = queue.flat();
  if (!over.length) return;
  // Past the cap: they join the summary this target already holds (due when it is), or start one,
  // due when the oldest send of the hour leaves the window.
  const existing = over.find((r) => r.summary_id)?.summary_id ?? undefined;
  const held = existing ? undefined : await heldSummary(query, rule.id, integrationId);
  const at = held ? held.next_attempt_at : new Date(time(sent.oldest ?? now) + hourMs);
  await hold(
    query,
    over.map((r) => r.id),
    existing ?? held?.summary_id ?? over[0].id,
    at,
  );
}
