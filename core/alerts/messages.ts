/**
 * What an alert says: one event ("alert.fired"), or past a rule's cap the events held in the
 * hour ("alert.summary"). The message id is the delivery's id (a summary's: its first delivery's),
 * so a retry carries the same `webhook-id` and a receiver can drop what it already has.
 */
import { visibleLine } from "../../contract/one-line.ts";
import { orgLink } from "../organizations/links.ts";
import type { OutgoingMessage, Severity } from "../integrations/payloads.ts";
import type { AlertRule } from "../db/alert-entities.ts";
import type { EventRow } from "./alert-queries.ts";

export interface AlertContext {
  rule: AlertRule;
  organization: { id: string; slug: string };
}

function eventData(event: EventRow) {
  return {
    id: event.id,
    action: event.action,
    kind: event.kind,
    severity: event.severity,
    serverId: event.server_id,
    targetType: event.target_type,
    targetId: event.target_id,
    actorEmail: event.actor_email,
    details: event.details,
    occurredAt: event.created_at.toISOString(),
  };
}

const ranks: Severity[] = ["info", "warning", "error"];
const worst = (events: readonly EventRow[]) => ranks[Math.max(...events.map((e) => ranks.indexOf(e.severity as Severity)))] ?? "info";

function describe(event: EventRow): string {
  const details = Object.entries(event.details ?? {})
    .slice(0, 8)
    // One line each, whatever a value holds (a name, a command): an email shows it as it is.
    .map(([k, v]) => `${k}: ${visibleLine(String(v).slice(0, 200))}`);
  return [`${event.action} (${event.kind}, ${event.severity})`, ...(event.actor_email ? [`by ${event.actor_email}`] : []), ...details].join("\n");
}

export function alertMessage(id: string, context: AlertContext, event: EventRow): OutgoingMessage {
  return {
    id,
    type: "alert.fired",
    title: `${context.rule.name}: ${event.action}`,
    text: describe(event),
    severity: worst([event]),
    occurredAt: new Date(event.created_at),
    link: orgLink(context.organization.slug, "/activity"),
    data: { organization: context.organization, rule: { id: context.rule.id, name: context.rule.name }, event: eventData(event) },
  };
}

/** The events held past the rule's hourly cap, in one message (at most 50 listed, all counted). */
export function summaryMessage(id: string, context: AlertContext, events: readonly EventRow[]): OutgoingMessage {
  const sorted = [...events].sort((a, b) => new Date(a.created_at).getTime() - new Date(b.created_at).getTime());
  const listed = sorted.slice(0, 50);
  return {
    id,
    type: "alert.summary",
    title: `${context.rule.name}: ${events.length} events held by the rule's hourly limit`,
    text:
      listed.map((e) => `${new Date(e.created_at).toISOString()} ${e.action} (${e.severity})`).join("\n") +
      (sorted.length > listed.length ? `\n… and ${sorted.length - listed.length} more` : ""),
    severity: worst(events),
    occurredAt: new Date(sorted.at(-1)!.created_at),
    link: orgLink(context.organization.slug, "/activity"),
    data: { organization: context.organization, rule: { id: context.rule.id, name: context.rule.name }, count: events.length, events: listed.map(eventData) },
  };
}
