/**
 * The organization's activity log, for owners and admins: filtered by server, kinds and
 * severities, paged with the API's cursor, each event acknowledged with a form POST.
 */
import type { Router } from "@koa/router";
import type { Context } from "koa";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { ActivityEvent } from "../../gen/outpost/activity/v1/activity_service_pb.js";
import { managedOrgOf, action, done, noticeOf, orgOf, page, render, type ActionHandler, type DashboardDeps, type Viewer } from "./context.ts";
import { choiceGroup, postForm, selectField } from "./forms.ts";
import { html } from "../html.ts";
import { orgPath } from "./paths.ts";
import { eventTable, kindLabels, severityLabels } from "./activity-table.ts";

const pageSize = 50;

/** The page's filters and position, from its query (or an acknowledge form's `view`); unknown values are dropped. */
function viewOf(params: URLSearchParams) {
  const server = params.get("server") ?? "";
  const kinds = kindLabels.filter((k) => params.getAll("kind").includes(k.name));
  const severities = severityLabels.filter((s) => params.getAll("severity").includes(s.name));
  const cursor = params.get("cursor") ?? "";
  return { server, kinds, severities, cursor };
}
type View = ReturnType<typeof viewOf>;

/** The view as a query string, without the cursor (`withCursor` to keep it). */
function queryOf(view: View, withCursor = false): URLSearchParams {
  const q = new URLSearchParams();
  if (view.server) q.set("server", view.server);
  for (const k of view.kinds) q.append("kind", k.name);
  for (const s of view.severities) q.append("severity", s.name);
  if (withCursor && view.cursor) q.set("cursor", view.cursor);
  return q;
}

const pathOf = (base: string, q: URLSearchParams) => (q.size ? `${base}?${q}` : base);

function filterForm(base: string, view: View, servers: ReadonlyArray<{ id: string; name: string }>) {
  return html`<form method="get" action="${base}" class="panel filters" aria-label="Filter activity">
${selectField({ name: "server", label: "Server", value: view.server, options: [{ value: "", label: "All servers" }, ...servers.map((s) => ({ value: s.id, label: s.name }))] })}
${choiceGroup({ name: "kind", legend: "Kinds (none: all)", type: "checkbox", options: kindLabels.map((k) => ({ value: k.name, label: k.label })), checked: new Set(view.kinds.map((k) => k.name)) })}
${choiceGroup({ name: "severity", legend: "Severities (none: all)", type: "checkbox", options: severityLabels.map((s) => ({ value: s.name, label: s.label })), checked: new Set(view.severities.map((s) => s.name)) })}
<div class="actions"><button type="submit" class="btn">Filter</button>${queryOf(view).size ? html` <a class="btn ghost" href="${base}">Clear</a>` : ""}</div>
</form>`;
}

async function activityPage(ctx: Context, v: Viewer): Promise<void> {
  const org = managedOrgOf(v, ctx.params.slug, "read its activity log");
  const view = viewOf(new URLSearchParams(ctx.querystring));
  const base = orgPath(org, "/activity");
  const [{ servers }, { events, nextCursor }] = await Promise.all([
    v.core.servers.listServers({ organizationSlug: org.slug }),
    v.core.activity.listOrganizationActivity({
      organizationSlug: org.slug,
      ...(view.server && { serverId: view.server }),
      kind: view.kinds.map((k) => k.value),
      severity: view.severities.map((s) => s.value),
      ...(view.cursor && { cursor: view.cursor }),
      limit: pageSize,
    }),
  ]);
  const here = queryOf(view, true).toString();
  const acknowledge = (e: ActivityEvent) =>
    postForm(
      `${base}/${e.id}/acknowledge`,
      v.formToken,
      html`<input type="hidden" name="view" value="${here}"><button type="submit" class="btn ghost" aria-label="Acknowledge ${e.action} at ${e.createdAt ? timestampDate(e.createdAt).toISOString() : ""}">Acknowledge</button>`,
      html` class="inline"`,
    );
  const older = nextCursor ? pathOf(base, new URLSearchParams([...queryOf(view), ["cursor", nextCursor]])) : undefined;
  render(ctx, v, {
    title: "Activity",
    org,
    section: "activity",
    notice: noticeOf(ctx),
    lede: "Every security-relevant change and event in the organization, newest first. Acknowledge what you have looked at.",
    body: html`${filterForm(base, view, servers)}
${eventTable(events, `Activity of ${org.name}`, { serverNames: new Map(servers.map((s) => [s.id, s.name])), acknowledge })}
<p>${view.cursor ? html`<a class="btn ghost" href="${pathOf(base, queryOf(view))}">Newest events</a> ` : ""}${older ? html`<a class="btn ghost" href="${older}">Older events</a>` : ""}</p>`,
  });
}

/** Acknowledges one event, then back to the same view of the log. */
const acknowledgeEvent: ActionHandler = async (ctx, v, form) => {
  const org = orgOf(v, ctx.params.slug);
  await v.core.activity.acknowledgeOrganizationActivityEvent({ organizationSlug: org.slug, eventId: ctx.params.eventId });
  const back = queryOf(viewOf(new URLSearchParams(form.get("view") ?? "")), true);
  done(ctx, pathOf(orgPath(org, "/activity"), back), "event-acknowledged");
};

export function activityRoutes(router: Router, deps: DashboardDeps): void {
  router.get("/app/o/:slug/activity", page(deps, activityPage));
  router.post("/app/o/:slug/activity/:eventId/acknowledge", action(deps, acknowledgeEvent));
}
