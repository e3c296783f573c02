/** Activity events as a table: shared by the organization's, the account's and the platform's logs. */
import { ActivityKind, ActivitySeverity, type ActivityEvent } from "../../gen/outpost/activity/v1/activity_service_pb.js";
import { when } from "./format.ts";
import { html, type Html } from "../html.ts";

/** The kinds as the filter and the table name them, in the API's order. */
export const kindLabels: ReadonlyArray<{ value: ActivityKind; name: string; label: string }> = [
  { value: ActivityKind.STATUS, name: "status", label: "Server status" },
  { value: ActivityKind.ACCESS, name: "access", label: "Access" },
  { value: ActivityKind.PLAYER_ADMIN, name: "player_admin", label: "Player administration" },
  { value: ActivityKind.OAUTH, name: "oauth", label: "OAuth" },
  { value: ActivityKind.SECURITY, name: "security", label: "Security" },
  { value: ActivityKind.ACCOUNT, name: "account", label: "Account" },
  { value: ActivityKind.CONFIGURATION, name: "configuration", label: "Configuration" },
];

export const severityLabels: ReadonlyArray<{ value: ActivitySeverity; name: string; label: string }> = [
  { value: ActivitySeverity.INFO, name: "info", label: "Info" },
  { value: ActivitySeverity.WARNING, name: "warning", label: "Warning" },
  { value: ActivitySeverity.ERROR, name: "error", label: "Error" },
];

const kindLabel = (k: ActivityKind) => kindLabels.find((l) => l.value === k)?.label ?? "—";

/** A severity as text with a class for its colour (the word carries it; the colour only repeats it). */
function severity(s: ActivitySeverity): Html {
  const found = severityLabels.find((l) => l.value === s);
  return found ? html`<span class="severity severity-${found.name}">${found.label}</span>` : html`<span class="muted">—</span>`;
}

function actor(e: ActivityEvent): string {
  if (!e.actor) return "—";
  if (e.actor.kind === "user") return `${e.actor.email || e.actor.userId}${e.actor.apiKeyId ? " (API key)" : ""}`;
  return e.actor.kind === "agent" ? "Agent" : "Outpost";
}

export interface EventTableOptions {
  /** Adds a Server column (organization logs); account and platform logs have none. */
  serverNames?: ReadonlyMap<string, string>;
  /** Adds an Acknowledged column; `acknowledge` renders the button of an event not yet acknowledged. */
  acknowledge?: (e: ActivityEvent) => Html;
}

function acknowledged(e: ActivityEvent, o: EventTableOptions): Html {
  const ack = e.acknowledgement;
  if (ack) return html`${ack.email || ack.userId}<br><span class="muted">${when(ack.acknowledgedAt)}</span>`;
  return o.acknowledge ? o.acknowledge(e) : html`<span class="muted">—</span>`;
}

function row(e: ActivityEvent, o: EventTableOptions): Html {
  const server = e.serverId ? (o.serverNames?.get(e.serverId) ?? html`<span class="muted">deleted</span>`) : html`<span class="muted">—</span>`;
  return html`<tr><td>${when(e.createdAt)}</td><td>${severity(e.severity)}</td><td>${kindLabel(e.kind)}</td><td class="mono">${e.action}</td><td>${actor(e)}</td>${
    o.serverNames ? html`<td>${server}</td>` : ""
  }<td>${Object.entries(e.details).map(([k, val], i) => html`${i ? html`<br>` : ""}<span class="muted">${k}:</span> ${val}`)}</td>${
    o.serverNames ? html`<td>${acknowledged(e, o)}</td>` : ""
  }</tr>`;
}

/** Events as a table, newest first, or a line saying there are none. */
export function eventTable(events: readonly ActivityEvent[], label: string, o: EventTableOptions = {}): Html {
  if (!events.length) return html`<p class="empty">No activity matches.</p>`;
  const head = html`<th scope="col">When</th><th scope="col">Severity</th><th scope="col">Kind</th><th scope="col">What</th><th scope="col">Who</th>${
    o.serverNames ? html`<th scope="col">Server</th>` : ""
  }<th scope="col">Details</th>${o.serverNames ? html`<th scope="col">Acknowledged</th>` : ""}`;
  return html`<div class="table-wrap" role="region" tabindex="0" aria-label="${label}"><table class="activity"><caption class="sr-only">${label}</caption><thead><tr>${head}</tr></thead><tbody>${events.map((e) => row(e, o))}</tbody></table></div>`;
}
