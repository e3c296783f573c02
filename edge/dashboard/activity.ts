/** The organization's activity log, for owners and admins, filtered by server and kind. */
import type { Router } from "@koa/router";
import type { Context } from "koa";
import type { ActivityEvent } from "../../gen/outpost/activity/v1/activity_service_pb.js";
import { orgOf, page, PageError, render, type DashboardDeps, type Viewer } from "./context.ts";
import { canManage, when } from "./format.ts";
import { selectField } from "./forms.ts";
import { html, type Html } from "../html.ts";
import { orgPath } from "./organizations.ts";

const kinds = [
  { value: "", label: "Everything" },
  { value: "server", label: "Servers" },
  { value: "member", label: "Members" },
  { value: "access_grant", label: "Access grants" },
  { value: "game_oauth_client", label: "Game OAuth clients" },
  { value: "game_oauth", label: "Game OAuth sign-ins" },
  { value: "organization", label: "Organization" },
];

const pageSize = 50;

function actor(e: ActivityEvent): string {
  if (!e.actor) return "—";
  if (e.actor.kind === "user") return `${e.actor.email || e.actor.userId}${e.actor.apiKeyId ? " (API key)" : ""}`;
  return e.actor.kind === "agent" ? "Agent" : "Outpost";
}

/**
 * Events as a table, newest first, or a line saying there are none. `serverNames` adds a Server
 * column (organization logs); account and platform logs have none.
 */
export function eventTable(events: readonly ActivityEvent[], label: string, serverNames?: ReadonlyMap<string, string>): Html {
  if (!events.length) return html`<p class="empty">No activity matches.</p>`;
  const server = (e: ActivityEvent) =>
    e.serverId ? (serverNames?.get(e.serverId) ?? html`<span class="muted">deleted</span>`) : html`<span class="muted">—</span>`;
  return html`<div class="table-wrap" role="region" tabindex="0" aria-label="${label}"><table class="activity"><caption class="sr-only">${label}</caption><thead><tr><th scope="col">When</th><th scope="col">What</th><th scope="col">Who</th>${serverNames ? html`<th scope="col">Server</th>` : ""}<th scope="col">Details</th></tr></thead><tbody>${events.map(
    (e) => html`<tr><td>${when(e.createdAt)}</td><td class="mono">${e.action}</td><td>${actor(e)}</td>${serverNames ? html`<td>${server(e)}</td>` : ""}<td>${Object.entries(e.details).map(
      ([k, val], i) => html`${i ? html`<br>` : ""}<span class="muted">${k}:</span> ${val}`,
    )}</td></tr>`,
  )}</tbody></table></div>`;
}

async function activityPage(ctx: Context, v: Viewer): Promise<void> {
  const org = orgOf(v, ctx.params.slug);
  if (!canManage(org.role)) throw new PageError(403, "Only owners and admins of the organization read its activity log.");
  const q = (name: string) => (typeof ctx.query[name] === "string" ? (ctx.query[name] as string) : "");
  const server = q("server");
  const kind = kinds.some((k) => k.value === q("kind")) ? q("kind") : "";
  const before = q("before");
  const [{ servers }, { events }] = await Promise.all([
    v.core.servers.listServers({ organizationSlug: org.slug }),
    v.core.activity.listOrganizationActivity({
      organizationSlug: org.slug,
      ...(server && { serverId: server }),
      ...(kind && { action: kind }),
      ...(before && { before }),
      limit: pageSize,
    }),
  ]);
  const names = new Map(servers.map((s) => [s.id, s.name]));
  const filter = new URLSearchParams({ ...(server && { server }), ...(kind && { kind }) });
  const older = events.length === pageSize ? `${orgPath(org, "/activity")}?${new URLSearchParams({ ...Object.fromEntries(filter), before: events.at(-1)!.id })}` : undefined;
  render(ctx, v, {
    title: "Activity",
    org,
    section: "activity",
    lede: "Every security-relevant change in the organization, newest first.",
    body: html`<form method="get" action="${orgPath(org, "/activity")}" class="panel filters" aria-label="Filter activity">
${selectField({ name: "server", label: "Server", value: server, options: [{ value: "", label: "All servers" }, ...servers.map((s) => ({ value: s.id, label: s.name }))] })}
${selectField({ name: "kind", label: "Kind", value: kind, options: kinds })}
<div class="actions"><button type="submit" class="btn">Filter</button>${filter.size ? html` <a class="btn ghost" href="${orgPath(org, "/activity")}">Clear</a>` : ""}</div>
</form>
${eventTable(events, `Activity of ${org.name}`, names)}
${older ? html`<p><a class="btn ghost" href="${older}">Older events</a></p>` : ""}`,
  });
}

export function activityRoutes(router: Router, deps: DashboardDeps): void {
  router.get("/app/o/:slug/activity", page(deps, activityPage));
}
