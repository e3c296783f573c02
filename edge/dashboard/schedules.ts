/**
 * A server's schedules page (owners and admins): each schedule with its next five times in its
 * own time zone and how its last run went, the form that adds one, and per schedule run now,
 * pause or resume, and delete. Plain forms to servers/createSchedule, updateSchedule,
 * runScheduleNow and deleteSchedule; a refused form comes back with core's messages by field.
 */
import type { Router } from "@koa/router";
import type { Context } from "koa";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { Organization } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { ScheduleAction, ScheduleRunOutcome, type Schedule, type ScheduleRun } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { action, confirmed, done, managedOrgOf, noticeOf, oneOf, page, render, type ActionHandler, type DashboardDeps, type Viewer } from "./context.ts";
import { formErrorsOrThrow, type FormErrors } from "./core.ts";
import { dangerForm, formAlert, postForm, selectField, textField } from "./forms.ts";
import { html, type Html } from "../html.ts";
import { orgPath } from "./paths.ts";

/** The add form's values as typed (kept when the form comes back refused). */
interface ScheduleValues {
  name: string;
  cron: string;
  timeZone: string;
  action: string;
  text: string;
  warnings: string;
}

const empty: ScheduleValues = { name: "", cron: "0 4 * * *", timeZone: "UTC", action: "restart", text: "", warnings: "10, 5, 1" };

const actions: ReadonlyArray<{ value: string; label: string; action: ScheduleAction }> = [
  { value: "restart", label: "Restart the server", action: ScheduleAction.RESTART },
  { value: "stop", label: "Stop the server", action: ScheduleAction.STOP },
  { value: "start", label: "Start the server", action: ScheduleAction.START },
  { value: "command", label: "Run a console command", action: ScheduleAction.COMMAND },
  { value: "broadcast", label: "Say a message in game", action: ScheduleAction.BROADCAST },
];
const outcomeWords: Partial<Record<ScheduleRunOutcome, string>> = {
  [ScheduleRunOutcome.RUNNING]: "Running",
  [ScheduleRunOutcome.OK]: "Done",
  [ScheduleRunOutcome.FAILED]: "Failed",
  [ScheduleRunOutcome.SKIPPED]: "Skipped",
};

/** A time in the schedule's zone, e.g. "Mon 30 Nov, 04:00". */
function inZone(date: Date, timeZone: string): Html {
  const words = new Intl.DateTimeFormat("en-GB", {
    timeZone,
    weekday: "short",
    day: "numeric",
    month: "short",
    hour: "2-digit",
    minute: "2-digit",
    hour12: false,
  }).format(date);
  return html`<time datetime="${date.toISOString()}">${words}</time>`;
}

function whatItDoes(s: Schedule): string {
  const label = actions.find((a) => a.action === s.action)?.label ?? "—";
  const text = s.action === ScheduleAction.COMMAND ? `: /${s.text.replace(/^\//, "")}` : s.action === ScheduleAction.BROADCAST ? `: “${s.text}”` : "";
  const warn = s.warningMinutes.length ? `, warning ${s.warningMinutes.join(", ")} min before` : "";
  return `${label}${text}${warn}`;
}

function lastRun(run: ScheduleRun | undefined, timeZone: string): Html {
  if (!run) return html`<span class="muted">Not yet</span>`;
  const tone = run.outcome === ScheduleRunOutcome.OK ? "online" : "offline";
  return html`<span class="status ${tone}">${outcomeWords[run.outcome] ?? "—"}</span> ${inZone(timestampDate(run.scheduledFor!), timeZone)}${run.manual ? " (by hand)" : ""}${run.detail ? html`<br><span class="hint wrap">${run.detail}</span>` : ""}`;
}

function row(v: Viewer, base: string, s: Schedule): Html {
  const at = `${base}/${s.id}`;
  const next = s.nextRuns.length
    ? html`<ol class="plain">${s.nextRuns.map((t) => html`<li>${inZone(timestampDate(t), s.timeZone)}</li>`)}</ol>`
    : html`<span class="muted">Paused</span>`;
  const toggle = postForm(
    `${at}/${s.enabled ? "pause" : "resume"}`,
    v.formToken,
    html`<button type="submit" class="btn small" aria-label="${s.enabled ? "Pause" : "Resume"} ${s.name}">${s.enabled ? "Pause" : "Resume"}</button>`,
    html` class="inline"`,
  );
  const run = postForm(`${at}/run`, v.formToken, html`<button type="submit" class="btn small" aria-label="Run now: ${s.name}">Run now</button>`, html` class="inline"`);
  const remove = dangerForm({
    action: `${at}/delete`,
    token: v.formToken,
    label: "Delete",
    ariaLabel: `Delete ${s.name}`,
    confirm: `Delete the schedule ${s.name}?`,
    consequence: "It stops running; its runs are forgotten.",
    buttonClass: "danger small",
  });
  return html`<tr><th scope="row">${s.name}</th><td><span class="mono">${s.cron}</span><br><span class="hint">${s.timeZone}</span></td><td>${whatItDoes(s)}</td><td>${next}</td><td>${lastRun(s.lastRun, s.timeZone)}</td><td>${run} ${toggle} ${remove}</td></tr>`;
}

function addForm(v: Viewer, base: string, values: ScheduleValues, errors?: FormErrors): Html {
  return postForm(
    base,
    v.formToken,
    html`${formAlert(errors, ["name", "cron", "timeZone", "text", "warningMinutes"])}
${textField({ name: "name", label: "Name", value: values.name, required: true, maxlength: 100, errors })}
${textField({ name: "cron", label: "When (cron: minute hour day month weekday)", value: values.cron, required: true, maxlength: 100, errors, hint: "For example 0 4 * * * is 04:00 every day; 30 */6 * * * is every six hours at half past." })}
${textField({ name: "timeZone", label: "Time zone", value: values.timeZone, required: true, maxlength: 64, errors, hint: "An IANA time zone, e.g. Europe/Berlin or UTC." })}
${selectField({ name: "action", label: "What", value: values.action, options: actions, errors })}
${textField({ name: "text", label: "Command or message", value: values.text, maxlength: 1000, errors, hint: "For a console command or a message in game." })}
${textField({ name: "warnings", id: "f-warningMinutes", label: "Warn players this many minutes before", value: values.warnings, maxlength: 40, errors: errors && { ...errors, fields: { warnings: errors.fields.warningMinutes ?? [] } }, hint: "For a restart or stop: e.g. 10, 5, 1. Empty: no warning." })}
<div class="actions"><button type="submit" class="btn primary">Add schedule</button></div>`,
    html` class="panel stack" aria-labelledby="add-schedule-heading"`,
  );
}

async function schedulesPage(ctx: Context, v: Viewer, o: { values?: ScheduleValues; errors?: FormErrors } = {}, status = 200): Promise<void> {
  const org = managedOrgOf(v, ctx.params.slug, "manage its servers' schedules");
  const serverId = ctx.params.id;
  const [{ server }, { schedules }] = await Promise.all([v.core.servers.getServer({ serverId }), v.core.servers.listSchedules({ serverId })]);
  const base = orgPath(org, `/servers/${serverId}/schedules`);
  render(
    ctx,
    v,
    {
      title: `Schedules of ${server!.name}`,
      org,
      section: "servers",
      notice: noticeOf(ctx),
      crumbs: [
        { href: orgPath(org, "/servers"), label: "Servers" },
        { href: orgPath(org, `/servers/${serverId}`), label: server!.name },
      ],
      lede: "Restart, stop or start the server, run a command or say something in game at set times. Each runs once, whichever Outpost instance is up; one missed while Outpost was down runs late if it is at most a few minutes late, else it is skipped.",
      body: html`${
        schedules.length
          ? html`<div class="table-wrap" role="region" tabindex="0" aria-label="Schedules of ${server!.name}"><table><caption class="sr-only">Schedules of ${server!.name}</caption><thead><tr><th scope="col">Name</th><th scope="col">When</th><th scope="col">What</th><th scope="col">Next runs (its time zone)</th><th scope="col">Last run</th><th scope="col">Actions</th></tr></thead><tbody>${schedules.map((s) => row(v, base, s))}</tbody></table></div>`
          : html`<p class="empty">No schedules yet.</p>`
      }
<h2 id="add-schedule-heading">Add a schedule</h2>
${addForm(v, base, o.values ?? empty, o.errors)}`,
    },
    status,
  );
}

function readForm(form: URLSearchParams): ScheduleValues {
  const get = (name: string) => (form.get(name) ?? "").trim();
  return { name: get("name"), cron: get("cron"), timeZone: get("timeZone"), action: get("action"), text: get("text"), warnings: get("warnings") };
}

/** The request core takes from the form's values (a warning that is no whole number is sent as 0, which core refuses by field). */
function termsOf(values: ScheduleValues, enabled: boolean) {
  const warningMinutes = values.warnings
    ? values.warnings
        .split(/[\s,]+/)
        .filter(Boolean)
        .map((w) => (/^\d+$/.test(w) ? Number(w) : 0))
    : [];
  const chosen = actions.find((a) => a.value === values.action)?.action ?? ScheduleAction.UNSPECIFIED;
  return { name: values.name, cron: values.cron, timeZone: values.timeZone, action: chosen, text: values.text, warningMinutes, enabled };
}

const createSchedule: ActionHandler = async (ctx, v, form) => {
  const org = managedOrgOf(v, ctx.params.slug, "manage its servers' schedules");
  const values = readForm(form);
  try {
    await v.core.servers.createSchedule({ serverId: ctx.params.id, ...termsOf(values, true) });
    done(ctx, orgPath(org, `/servers/${ctx.params.id}/schedules`), "schedule-created");
  } catch (error) {
    await schedulesPage(ctx, v, { values, errors: formErrorsOrThrow(error) }, 400);
  }
};

/** One schedule's action: find it among the server's, do it (after asking, for a delete without script), and come back with a notice. */
function scheduleAction(then: (v: Viewer, s: Schedule) => Promise<unknown>, notice: string, ask?: { title: string; consequence: string; label: string }): ActionHandler {
  return async (ctx, v, form) => {
    const org = managedOrgOf(v, ctx.params.slug, "manage its servers' schedules");
    const back = orgPath(org, `/servers/${ctx.params.id}/schedules`);
    const { schedules } = await v.core.servers.listSchedules({ serverId: ctx.params.id });
    const schedule = oneOf(schedules, ctx.params.scheduleId, "That schedule does not exist.");
    if (ask && !confirmed(ctx, v, form, { ...ask, cancel: back, org })) return;
    await then(v, schedule);
    done(ctx, back, notice);
  };
}

const setEnabled = (enabled: boolean) => (v: Viewer, s: Schedule) =>
  v.core.servers.updateSchedule({
    scheduleId: s.id,
    name: s.name,
    cron: s.cron,
    timeZone: s.timeZone,
    action: s.action,
    text: s.text,
    warningMinutes: s.warningMinutes,
    enabled,
  });

export function scheduleRoutes(router: Router, deps: DashboardDeps): void {
  const base = "/app/o/:slug/servers/:id/schedules";
  router.get(
    base,
    page(deps, (ctx, v) => schedulesPage(ctx, v)),
  );
  router.post(base, action(deps, createSchedule));
  router.post(
    `${base}/:scheduleId/run`,
    action(
      deps,
      scheduleAction((v, s) => v.core.servers.runScheduleNow({ scheduleId: s.id }), "schedule-ran"),
    ),
  );
  router.post(`${base}/:scheduleId/pause`, action(deps, scheduleAction(setEnabled(false), "schedule-paused")));
  router.post(`${base}/:scheduleId/resume`, action(deps, scheduleAction(setEnabled(true), "schedule-resumed")));
  const remove = (v: Viewer, s: Schedule) => v.core.servers.deleteSchedule({ scheduleId: s.id });
  const ask = { title: "Delete this schedule?", consequence: "It stops running; its runs are forgotten.", label: "Delete schedule" };
  router.post(`${base}/:scheduleId/delete`, action(deps, scheduleAction(remove, "schedule-deleted", ask)));
}

/** The link on a server's page. */
export function schedulesLink(org: Organization, serverId: string): Html {
  return html`<section class="panel stack" aria-labelledby="schedules-heading"><h2 id="schedules-heading">Schedules</h2>
<p>Restart the server every night, warn players first, run commands at set times. <a href="${orgPath(org, `/servers/${serverId}/schedules`)}">Manage schedules</a></p></section>`;
}
