/**
 * The alerts pages of an organization: its rules (what each matches, where it sends, delete) with
 * the form that adds one (and edits one, on its own page), and the deliveries (status, attempts, last answer, next try). The forms
 * they post are handled in alerts.ts.
 */
import type { Context } from "koa";
import { AlertCondition, AlertDeliveryStatus, type AlertRule, type AlertThreshold } from "../../gen/outpost/alerts/v1/alerts_service_pb.js";
import { ActivityKind, ActivitySeverity } from "../../gen/outpost/activity/v1/activity_service_pb.js";
import type { Organization } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { managedOrgOf, oneOf, noticeOf, render, type Viewer } from "./context.ts";
import type { FormErrors } from "./core.ts";
import { when } from "./format.ts";
import { choiceGroup, dangerForm, formAlert, postForm, selectField, textField } from "./forms.ts";
import { html, type Html } from "../html.ts";
import { orgPath } from "./paths.ts";

/** The add form's values as typed (kept when a form comes back refused). */
export interface RuleValues {
  name: string;
  serverId: string;
  kinds: string[];
  severities: string[];
  integrationIds: string[];
  notifyDashboard: boolean;
  quietStart: string;
  quietEnd: string;
  timeZone: string;
  maxPerHour: string;
  /** A threshold's condition ("" for a rule on events), its value and minutes as typed. */
  condition: string;
  thresholdValue: string;
  minutes: string;
}

export const emptyRule: RuleValues = {
  name: "",
  serverId: "",
  kinds: [],
  severities: [],
  integrationIds: [],
  notifyDashboard: true,
  quietStart: "",
  quietEnd: "",
  timeZone: "",
  maxPerHour: "",
  condition: "",
  thresholdValue: "",
  minutes: "",
};

/** What a threshold watches, as the form offers it and the rules list says it. */
export const conditionOptions = [
  { value: "", label: "Events (the kinds and severities below)" },
  { value: "tps_below", label: "TPS below a value" },
  { value: "memory_above_percent", label: "Memory above a percent of its limit" },
  { value: "crash_loop", label: "A crash loop" },
  { value: "stopped_unexpectedly", label: "The server crashed" },
  { value: "no_samples", label: "No samples from the server" },
];

function thresholdWords(t: AlertThreshold): string {
  const minutes = `for ${t.minutes} min`;
  switch (t.condition) {
    case AlertCondition.TPS_BELOW:
      return `TPS below ${t.value} ${minutes}`;
    case AlertCondition.MEMORY_ABOVE_PERCENT:
      return `memory above ${t.value} % of its limit ${minutes}`;
    case AlertCondition.CRASH_LOOP:
      return "a crash loop";
    case AlertCondition.STOPPED_UNEXPECTEDLY:
      return "the server crashed";
    default:
      return `no samples ${minutes}`;
  }
}

const kindOptions = Object.entries(ActivityKind)
  .filter(([k, v]) => typeof v === "number" && v !== 0 && isNaN(Number(k)))
  .map(([k]) => ({ value: k.toLowerCase(), label: k.toLowerCase().replace("_", " ") }));
const severityOptions = ["info", "warning", "error"].map((s) => ({ value: s, label: s }));

/** The organization of the URL, when the viewer may manage its alerts; else a 403 page. */
export function managedAlerts(v: Viewer, slug: string): Organization {
  return managedOrgOf(v, slug, "manage its alerts");
}

function matches(rule: AlertRule, servers: Map<string, string>): string {
  const s = rule.spec!;
  if (s.threshold) return [thresholdWords(s.threshold), s.serverId ? `server ${servers.get(s.serverId) ?? s.serverId}` : "any server"].join(" · ");
  const parts = [
    s.kinds.length ? s.kinds.map((k) => ActivityKind[k].toLowerCase()).join(", ") : "every kind",
    s.severities.length ? s.severities.map((x) => ActivitySeverity[x].toLowerCase()).join(", ") : "every severity",
    s.serverId ? `server ${servers.get(s.serverId) ?? s.serverId}` : "any server",
  ];
  return parts.join(" · ");
}

function targets(rule: AlertRule, integrations: Map<string, string>): string {
  const s = rule.spec!;
  return [...s.integrationIds.map((id) => integrations.get(id) ?? id), ...(s.notifyDashboard ? ["Dashboard"] : [])].join(", ");
}

/** A rule's values as the form shows them, to edit it. */
export function ruleValues(rule: AlertRule): RuleValues {
  const s = rule.spec!;
  return {
    name: s.name,
    serverId: s.serverId ?? "",
    kinds: s.kinds.map((k) => ActivityKind[k].toLowerCase()),
    severities: s.severities.map((x) => ActivitySeverity[x].toLowerCase()),
    integrationIds: s.integrationIds,
    notifyDashboard: s.notifyDashboard,
    quietStart: s.quietHours?.start ?? "",
    quietEnd: s.quietHours?.end ?? "",
    timeZone: s.quietHours?.timeZone ?? "",
    maxPerHour: s.maxDeliveriesPerHour ? String(s.maxDeliveriesPerHour) : "",
    condition: s.threshold ? AlertCondition[s.threshold.condition].toLowerCase() : "",
    thresholdValue: s.threshold?.value ? String(s.threshold.value) : "",
    minutes: s.threshold?.minutes ? String(s.threshold.minutes) : "",
  };
}

type Named = Array<{ id: string; name: string }>;

/** The rule form: adding one (to /alerts) or editing one (to /alerts/<id>). */
function ruleForm(v: Viewer, org: Organization, values: RuleValues, servers: Named, integrations: Named, errors: FormErrors | undefined, ruleId?: string): Html {
  return postForm(
    orgPath(org, ruleId ? `/alerts/${ruleId}` : "/alerts"),
    v.formToken,
    html`${formAlert(errors, [])}
${textField({ name: "name", label: "Name", value: values.name, required: true, maxlength: 80, errors })}
${selectField({ name: "serverId", label: "Server", value: values.serverId, options: [{ value: "", label: "Any server" }, ...servers.map((s) => ({ value: s.id, label: s.name }))], errors })}
${selectField({ name: "condition", label: "Watch", value: values.condition, options: conditionOptions, errors })}
${textField({ name: "thresholdValue", label: "Value (TPS, or percent of the memory limit)", value: values.thresholdValue, maxlength: 6, hint: "For TPS below and memory above only." })}
${textField({ name: "minutes", label: "For how many minutes", value: values.minutes, maxlength: 4, hint: "For TPS, memory and no samples: how long it must hold (1 to 1440). The rule sends once when it starts to hold and once when it stops." })}
${choiceGroup({ name: "kinds", legend: "Kinds", type: "checkbox", options: kindOptions, checked: new Set(values.kinds), hint: "None ticked: every kind." })}
${choiceGroup({ name: "severities", legend: "Severities", type: "checkbox", options: severityOptions, checked: new Set(values.severities), hint: "None ticked: every severity." })}
${choiceGroup({ name: "integrationIds", legend: "Send to", type: "checkbox", options: [...integrations.map((i) => ({ value: i.id, label: i.name })), { value: "dashboard", label: "The dashboard (owners and admins)" }], checked: new Set([...values.integrationIds, ...(values.notifyDashboard ? ["dashboard"] : [])]) })}
${textField({ name: "quietStart", label: "Quiet hours from (HH:MM)", value: values.quietStart, maxlength: 5, hint: "Optional: nothing is sent in the window; it is sent when the window ends." })}
${textField({ name: "quietEnd", label: "Quiet hours until (HH:MM)", value: values.quietEnd, maxlength: 5 })}
${textField({ name: "timeZone", label: "Time zone", value: values.timeZone, maxlength: 64, hint: "An IANA time zone, e.g. Europe/Paris." })}
${textField({ name: "maxPerHour", label: "At most this many per hour to each target", value: values.maxPerHour, maxlength: 4, hint: "Past it, events are sent as one summary. Empty: 20." })}
<div class="actions"><button type="submit" class="btn primary">${ruleId ? "Save alert rule" : "Add alert rule"}</button>${ruleId ? html` <a class="btn" href="${orgPath(org, "/alerts")}">Cancel</a>` : ""}</div>`,
    html` class="panel stack" aria-labelledby="${ruleId ? "edit-rule-heading" : "add-rule-heading"}"`,
  );
}

/** A rule's buttons beside delete: edit it, pause or resume it. */
function ruleActions(v: Viewer, org: Organization, r: AlertRule): Html {
  const base = orgPath(org, `/alerts/${r.id}`);
  const name = r.spec!.name;
  const toggle = r.spec!.enabled
    ? postForm(`${base}/pause`, v.formToken, html`<button type="submit" class="btn small" aria-label="Pause ${name}">Pause</button>`, html` class="inline"`)
    : postForm(`${base}/resume`, v.formToken, html`<button type="submit" class="btn small" aria-label="Resume ${name}">Resume</button>`, html` class="inline"`);
  return html`<a class="btn small" href="${base}/edit" aria-label="Edit ${name}">Edit</a> ${toggle}`;
}

/** The rules, the integrations and the servers a rule form offers. */
async function ruleChoices(v: Viewer, org: Organization) {
  const [{ rules }, { integrations }, { servers }] = await Promise.all([
    v.core.alerts.listAlertRules({ organizationSlug: org.slug }),
    v.core.integrations.listIntegrations({ organizationSlug: org.slug }),
    v.core.servers.listServers({ organizationSlug: org.slug }),
  ]);
  return { rules, integrations, servers };
}

/** One rule of the organization, or a 404 page. */
const noRule = "That alert rule does not exist.";

export async function ruleOf(v: Viewer, org: Organization, ruleId: string): Promise<AlertRule> {
  const { rules } = await v.core.alerts.listAlertRules({ organizationSlug: org.slug });
  return oneOf(rules, ruleId, noRule);
}

export async function editRulePage(ctx: Context, v: Viewer, o: { values?: RuleValues; errors?: FormErrors } = {}, status = 200): Promise<void> {
  const org = managedAlerts(v, ctx.params.slug);
  const { rules, integrations, servers } = await ruleChoices(v, org);
  const rule = oneOf(rules, ctx.params.ruleId, noRule);
  render(
    ctx,
    v,
    {
      title: `Edit ${rule.spec!.name}`,
      org,
      section: "alerts",
      crumbs: [{ href: orgPath(org, "/alerts"), label: "Alerts" }],
      body: html`<h2 id="edit-rule-heading">The rule</h2>
${ruleForm(v, org, o.values ?? ruleValues(rule), servers, integrations, o.errors, rule.id)}`,
    },
    status,
  );
}

export async function alertsPage(ctx: Context, v: Viewer, o: { values?: RuleValues; errors?: FormErrors } = {}, status = 200): Promise<void> {
  const org = managedAlerts(v, ctx.params.slug);
  const { rules, integrations, servers } = await ruleChoices(v, org);
  const serverNames = new Map(servers.map((s) => [s.id, s.name]));
  const integrationNames = new Map(integrations.map((i) => [i.id, i.name]));
  const rows = rules.map(
    (r) =>
      html`<tr><th scope="row">${r.spec!.name}</th><td>${matches(r, serverNames)}</td><td>${targets(r, integrationNames)}</td><td>${r.spec!.enabled ? html`<span class="status online">Enabled</span>` : html`<span class="status offline">Disabled</span>`}</td><td>${when(r.createdAt)}</td><td>${ruleActions(v, org, r)} ${dangerForm({ action: orgPath(org, `/alerts/${r.id}/delete`), token: v.formToken, label: "Delete", ariaLabel: `Delete ${r.spec!.name}`, confirm: `Delete the alert rule ${r.spec!.name}?`, consequence: "Its deliveries not yet sent are dropped. This cannot be undone.", buttonClass: "danger small" })}</td></tr>`,
  );
  render(
    ctx,
    v,
    {
      title: "Alerts",
      org,
      section: "alerts",
      notice: noticeOf(ctx),
      lede: html`Which events are sent where. <a href="${orgPath(org, "/alerts/deliveries")}">See the deliveries</a>.`,
      body: html`${
        rules.length
          ? html`<div class="table-wrap" role="region" tabindex="0" aria-label="Alert rules of ${org.name}"><table><caption class="sr-only">Alert rules of ${org.name}</caption><thead><tr><th scope="col">Name</th><th scope="col">Matches</th><th scope="col">Sends to</th><th scope="col">State</th><th scope="col">Added</th><th scope="col">Actions</th></tr></thead><tbody>${rows}</tbody></table></div>`
          : html`<p class="empty">No alert rules yet.</p>`
      }
<h2 id="add-rule-heading">Add an alert rule</h2>
${ruleForm(v, org, o.values ?? emptyRule, servers, integrations, o.errors)}`,
    },
    status,
  );
}

const statusNames: Record<number, string> = {
  [AlertDeliveryStatus.PENDING]: "Pending",
  [AlertDeliveryStatus.DELIVERED]: "Delivered",
  [AlertDeliveryStatus.FAILED]: "Failed",
  [AlertDeliveryStatus.REFUSED]: "Refused",
};

export async function deliveriesPage(ctx: Context, v: Viewer): Promise<void> {
  const org = managedAlerts(v, ctx.params.slug);
  const cursor = typeof ctx.query.cursor === "string" && ctx.query.cursor ? ctx.query.cursor : undefined;
  const [{ deliveries, nextCursor }, { rules }, { integrations }] = await Promise.all([
    v.core.alerts.listAlertDeliveries({ organizationSlug: org.slug, limit: 50, cursor }),
    v.core.alerts.listAlertRules({ organizationSlug: org.slug }),
    v.core.integrations.listIntegrations({ organizationSlug: org.slug }),
  ]);
  const ruleNames = new Map(rules.map((r) => [r.id, r.spec!.name]));
  const integrationNames = new Map(integrations.map((i) => [i.id, i.name]));
  const rows = deliveries.map(
    (d) =>
      html`<tr><td>${when(d.createdAt)}</td><th scope="row">${ruleNames.get(d.ruleId) ?? "—"}</th><td class="mono">${d.action}</td><td>${d.dashboard ? "Dashboard" : (integrationNames.get(d.integrationId) ?? "—")}</td><td>${statusNames[d.status] ?? "—"}</td><td>${String(d.attempts)}</td><td>${d.lastResponseStatus ? String(d.lastResponseStatus) : "—"}</td><td class="wrap">${d.lastError || "—"}</td><td>${when(d.nextAttemptAt)}</td><td>${when(d.deliveredAt)}</td></tr>`,
  );
  render(ctx, v, {
    title: "Alert deliveries",
    org,
    section: "alerts",
    crumbs: [{ href: orgPath(org, "/alerts"), label: "Alerts" }],
    lede: "Each event an alert rule matched, for each place it is sent: newest first.",
    body: html`${
      deliveries.length
        ? html`<div class="table-wrap" role="region" tabindex="0" aria-label="Alert deliveries of ${org.name}"><table><caption class="sr-only">Alert deliveries of ${org.name}</caption><thead><tr><th scope="col">When</th><th scope="col">Rule</th><th scope="col">Event</th><th scope="col">To</th><th scope="col">Status</th><th scope="col">Attempts</th><th scope="col">Last answer</th><th scope="col">Last error</th><th scope="col">Next try</th><th scope="col">Delivered</th></tr></thead><tbody>${rows}</tbody></table></div>`
        : html`<p class="empty">No deliveries yet.</p>`
    }
${nextCursor ? html`<div class="actions"><a class="btn" href="${orgPath(org, `/alerts/deliveries?cursor=${encodeURIComponent(nextCursor)}`)}">Older deliveries</a></div>` : ""}`,
  });
}
