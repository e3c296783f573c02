/**
 * The assistant's settings page of an organization: today's usage against the limits, the
 * emergency stop (a button of its own, at the top), and the settings: a form for owners and
 * admins, the same facts read-only for members. The forms it posts are handled in assistant.ts.
 */
import type { Context } from "koa";
import { ResponseStyle, type OcelotConfig, type OcelotSettings, type UsageStats } from "../../gen/outpost/ocelot/v1/resources_pb.js";
import type { Organization } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { noticeOf, orgOf, render, type Viewer } from "./context.ts";
import type { FormErrors } from "./core.ts";
import { canManage, when } from "./format.ts";
import { choiceGroup, formAlert, postForm, selectField, textArea, textField } from "./forms.ts";
import { html, type Html } from "../html.ts";
import { orgPath } from "./paths.ts";

/** The tool families with their labels, in the order shown. */
export const familyFields = [
  ["consoleRead", "Read server consoles"],
  ["consoleCommand", "Run console commands (each one confirmed by a person)"],
  ["players", "List online players"],
  ["knowledgeRead", "Search the organization's notes"],
  ["knowledgeWrite", "Write notes (owners and admins only)"],
  ["serverLifecycle", "Restart servers (each restart asks you first)"],
  ["files", "Read, search and change server files (each change confirmed by a person)"],
] as const;

export type FamilyField = (typeof familyFields)[number][0];

export const styleOptions = [
  { value: "concise", label: "Concise" },
  { value: "detailed", label: "Detailed" },
  { value: "friendly", label: "Friendly" },
];

export function styleValue(style: ResponseStyle): string {
  return style === ResponseStyle.DETAILED ? "detailed" : style === ResponseStyle.FRIENDLY ? "friendly" : "concise";
}

export const settingsPath = (org: Organization) => orgPath(org, "/assistant/settings");

function usagePanel(usage: UsageStats): Html {
  const of = (used: number, limit: number) => `${used} of ${limit}`;
  return html`<section class="panel" aria-labelledby="usage-heading">
<h2 id="usage-heading">Today (${usage.day}, UTC)</h2>
<dl class="facts">
<div><dt>Questions</dt><dd>${of(usage.queries, usage.queryLimit)}</dd></div>
<div><dt>Tool actions</dt><dd>${of(usage.toolActions, usage.toolActionLimit)}</dd></div>
<div><dt>Notes</dt><dd>${usage.noteLimit ? of(usage.notes, usage.noteLimit) : "Not available"}</dd></div>
</dl>
</section>`;
}

function stopPanel(v: Viewer, org: Organization, config: OcelotConfig): Html {
  const stop = config.emergencyStop!;
  const state = stop.on
    ? html`<p><span class="status offline">Stopped</span> by ${stop.setByEmail || "someone"}, ${when(stop.setAt)}. Every question and tool action is refused until it is released.</p>`
    : html`<p><span class="status online">Running</span> The stop refuses every question and tool action at once, including actions already authorized.</p>`;
  const button = canManage(org.role)
    ? postForm(
        orgPath(org, "/assistant/emergency-stop"),
        v.formToken,
        html`<input type="hidden" name="on" value="${stop.on ? "no" : "yes"}">
<div class="actions"><button type="submit" class="btn ${stop.on ? "primary" : "danger"}">${stop.on ? "Release the emergency stop" : "Emergency stop"}</button></div>`,
      )
    : "";
  return html`<section class="panel stack danger-zone" aria-labelledby="stop-heading">
<h2 id="stop-heading">Emergency stop</h2>
${state}
${button}
</section>`;
}

function readOnly(config: OcelotConfig): Html {
  const s = config.settings!;
  const tools = s.tools!;
  const on = familyFields.filter(([field]) => tools[field]).map(([, label]) => label);
  return html`<section class="panel" aria-labelledby="settings-heading">
<h2 id="settings-heading">Settings</h2>
<dl class="facts">
<div><dt>Assistant</dt><dd>${s.enabled ? "On" : "Off"}</dd></div>
<div><dt>Answers</dt><dd>${styleOptions.find((o) => o.value === styleValue(s.responseStyle))!.label}</dd></div>
<div><dt>Organization's daily cap</dt><dd>${s.dailyQueryCap ? String(s.dailyQueryCap) : "The plan's limit"}</dd></div>
<div><dt>Break-glass</dt><dd>${config.breakGlass!.on ? html`On until ${when(config.breakGlass!.expiresAt)}` : "Off"}</dd></div>
<div class="wide"><dt>Tools it may use</dt><dd>${on.length ? on.join("; ") : "None"}</dd></div>
</dl>
<p class="hint">Only owners and admins change these settings and see the custom instructions.</p>
</section>`;
}

export interface SettingsValues {
  settings: OcelotSettings;
  breakGlass: boolean;
  breakGlassMinutes: string;
  version: number;
}

function settingsForm(v: Viewer, org: Organization, values: SettingsValues, config: OcelotConfig, errors?: FormErrors): Html {
  const s = values.settings;
  const glass = config.breakGlass!;
  return postForm(
    settingsPath(org),
    v.formToken,
    html`${formAlert(errors, ["breakGlassMinutes"])}
<input type="hidden" name="version" value="${String(values.version)}">
${choiceGroup({ name: "enabled", legend: "Assistant", type: "checkbox", options: [{ value: "yes", label: "On in this organization" }], checked: new Set(s.enabled ? ["yes"] : []) })}
${choiceGroup({ name: "tools", legend: "Tools it may use", type: "checkbox", options: familyFields.map(([value, label]) => ({ value, label })), checked: new Set(familyFields.filter(([f]) => s.tools![f]).map(([f]) => f)), hint: "Members use a tool only where they could act themselves (their server grants)." })}
${textField({ name: "dailyQueryCap", label: "Questions per day for the organization", value: s.dailyQueryCap ? String(s.dailyQueryCap) : "", maxlength: 6, hint: "Empty: the plan's limit. It cannot be higher than the plan's." })}
${selectField({ name: "responseStyle", label: "Answers", value: styleValue(s.responseStyle), options: styleOptions })}
${textArea({ name: "customInstructions", label: "Custom instructions", value: s.customInstructions, rows: 5, hint: "At most 4,000 characters. Members do not see them." })}
<fieldset class="field choices" aria-describedby="break-glass-warning">
<legend>Break-glass</legend>
<p class="warning" id="break-glass-warning"><strong>No confirmations while it is on:</strong> console commands run without a person allowing each one. Turning it on or off is recorded in the activity log as a security warning, and it turns itself off at the end.</p>
<div class="choice"><input type="checkbox" id="f-breakGlass" name="breakGlass" value="yes"${values.breakGlass ? html` checked` : ""}> <label for="f-breakGlass">${glass.on ? html`On until ${when(glass.expiresAt)}` : "Turn on"}</label></div>
</fieldset>
${textField({ name: "breakGlassMinutes", label: "Break-glass lasts (minutes)", value: values.breakGlassMinutes, maxlength: 4, errors, hint: "1 to 1440 (24 hours); empty: 60. Used when it is turned on." })}
<div class="actions"><button type="submit" class="btn primary">Save settings</button></div>`,
    html` class="panel stack" aria-labelledby="settings-heading"`,
  );
}

export async function assistantPage(ctx: Context, v: Viewer, o: { values?: SettingsValues; errors?: FormErrors } = {}, status = 200): Promise<void> {
  const org = orgOf(v, ctx.params.slug);
  const [{ config }, { usage }] = await Promise.all([
    v.core.ocelot.getOcelotConfig({ organizationSlug: org.slug }),
    v.core.ocelot.getOcelotUsageStats({ organizationSlug: org.slug }),
  ]);
  const values = o.values ?? { settings: config!.settings!, breakGlass: config!.breakGlass!.on, breakGlassMinutes: "", version: config!.version };
  render(
    ctx,
    v,
    {
      title: "Assistant",
      org,
      section: "assistant",
      notice: noticeOf(ctx),
      lede: "Ocelot, the assistant: what it may do in this organization, and how much of today's allowance is used.",
      body: html`${stopPanel(v, org, config!)}
${usagePanel(usage!)}
${
  canManage(org.role)
    ? html`<h2 id="settings-heading">Settings</h2>
${settingsForm(v, org, values, config!, o.errors)}`
    : readOnly(config!)
}`,
    },
    status,
  );
}
