/**
 * Members' access grants on a server's page (owners and admins): who has one, revoking it, and
 * granting it to a member who has none. Owners and admins need none; they see every server.
 */
import type { Router } from "@koa/router";
import type { Server } from "../../gen/outpost/servers/v1/resources_pb.js";
import { Role, type Organization } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { action, confirmed, done, orgOf, type DashboardDeps, type Viewer } from "./context.ts";
import { formErrorsOrThrow, type FormErrors } from "./core.ts";
import { dangerForm, formAlert, postForm, selectField } from "./forms.ts";
import { html, type Html } from "../html.ts";
import { orgPath } from "./organizations.ts";
import type { ServerPage } from "./servers.ts";

/** What revoking a grant does, as both confirmations say it (core re-checks open consoles every 5 s). */
const revokeConsequence = "They stop seeing this server and using its console at once; a live console they have open stops within a few seconds.";

/** The "Member access" panel of server `s`. */
export async function accessSection(v: Viewer, org: Organization, s: Server, grantErrors?: FormErrors): Promise<Html> {
  const base = orgPath(org, `/servers/${s.id}`);
  const [{ members }, { accessGrants }] = await Promise.all([
    v.core.organizations.listMembers({ organizationSlug: org.slug }),
    v.core.organizations.listAccessGrants({ organizationSlug: org.slug, serverId: s.id }),
  ]);
  const granted = new Set(accessGrants.map((g) => g.userId));
  const byId = new Map(members.map((m) => [m.userId, m]));
  const candidates = members.filter((m) => m.role === Role.MEMBER && !granted.has(m.userId));
  const grants = accessGrants.map((g) => {
    const m = byId.get(g.userId);
    const who = m ? `${m.name} (${m.email})` : g.userId;
    return html`<li><span>${who}</span> ${dangerForm({
      action: `${base}/grants/${g.userId}/revoke`,
      token: v.formToken,
      label: "Revoke",
      ariaLabel: `Revoke access of ${m?.email ?? g.userId}`,
      confirm: `Revoke ${m?.email ?? "this member"}'s access to ${s.name}?`,
      consequence: revokeConsequence,
      buttonClass: "danger small",
    })}</li>`;
  });
  return html`<section class="panel stack" aria-labelledby="access-heading">
<h2 id="access-heading">Member access</h2>
<p class="hint">Owners and admins always see this server and may use its console. Members see it, and use its console, only with a grant.</p>
${grants.length ? html`<ul class="list">${grants}</ul>` : html`<p class="empty">No member has access to this server.</p>`}
${
  candidates.length
    ? postForm(
        `${base}/grants`,
        v.formToken,
        html`${formAlert(grantErrors, ["userId"])}${selectField({
          name: "userId",
          label: "Give access to",
          options: candidates.map((m) => ({ value: m.userId, label: `${m.name} (${m.email})` })),
          errors: grantErrors,
        })}<div class="actions"><button type="submit" class="btn">Grant access</button></div>`,
        html` class="stack"`,
      )
    : html`<p class="hint">Every member with the Member role already has access, or there is none. Add members on the <a href="${orgPath(org, "/members")}">Members</a> page.</p>`
}
</section>`;
}

/** Granting and revoking; a refused grant comes back on the server's page (`showServer`). */
export function accessRoutes(router: Router, deps: DashboardDeps, showServer: ServerPage): void {
  router.post(
    "/app/o/:slug/servers/:id/grants",
    action(deps, async (ctx, v, form) => {
      const org = orgOf(v, ctx.params.slug);
      try {
        await v.core.organizations.createAccessGrant({ organizationSlug: org.slug, serverId: ctx.params.id, userId: form.get("userId") ?? "" });
        done(ctx, orgPath(org, `/servers/${ctx.params.id}`), "grant-created");
      } catch (error) {
        await showServer(ctx, v, { grantErrors: formErrorsOrThrow(error, { grant_exists: "userId" }) }, 400);
      }
    }),
  );

  router.post(
    "/app/o/:slug/servers/:id/grants/:userId/revoke",
    action(deps, async (ctx, v, form) => {
      const org = orgOf(v, ctx.params.slug);
      if (!confirmed(ctx, v, form, { title: "Revoke this member's access?", consequence: revokeConsequence, label: "Revoke", cancel: orgPath(org, `/servers/${ctx.params.id}`), org })) return;
      await v.core.organizations.revokeAccessGrant({ organizationSlug: org.slug, serverId: ctx.params.id, userId: ctx.params.userId });
      done(ctx, orgPath(org, `/servers/${ctx.params.id}`), "grant-revoked");
    }),
  );
}
