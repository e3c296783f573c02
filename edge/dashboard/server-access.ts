/**
 * Members' access on a server's page. Owners and admins see who has a grant (its actions, limits
 * and state), revoke it, and grant a member who has none; a member without access (none, expired,
 * used up) sees why and may ask for it. Owners and admins need no grant; they may do everything.
 */
import type { Router } from "@koa/router";
import type { Context } from "koa";
import type { Server } from "../../gen/outpost/servers/v1/resources_pb.js";
import { Role, type Organization } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { action, confirmed, done, orgOf, render, type DashboardDeps, type Viewer } from "./context.ts";
import type { FormErrors } from "./core.ts";
import { dangerForm, formAlert, postForm, selectField, textArea } from "./forms.ts";
import { html, type Html } from "../html.ts";
import { orgPath } from "./paths.ts";
import type { ServerPage } from "./server-page.ts";
import { defaultTerms, grantSummary, submitTerms, termsFields, type Terms, type TermsForm, type TermsValues } from "./grant-views.ts";

/** What revoking a grant does, as both confirmations say it (core re-checks open consoles every 5 s). */
const revokeConsequence = "They stop seeing this server and using its console at once; a live console they have open stops within a few seconds.";

/** The "Member access" panel of server `s`. */
export async function accessSection(v: Viewer, org: Organization, s: Server, refused?: TermsForm): Promise<Html> {
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
    return html`<li><span><strong>${who}</strong>: ${grantSummary(g)}</span> ${dangerForm({
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
<p class="hint">Owners and admins may do everything on this server. Members see it, and use its console, only as far as their grant allows. Requests are decided on the <a href="${orgPath(org, "/access")}">Access</a> page.</p>
${grants.length ? html`<ul class="list">${grants}</ul>` : html`<p class="empty">No member has access to this server.</p>`}
${
  candidates.length
    ? postForm(
        `${base}/grants`,
        v.formToken,
        html`${formAlert(refused?.errors, ["userId", "actions", "constraints"])}${selectField({
          name: "userId",
          label: "Give access to",
          options: candidates.map((m) => ({ value: m.userId, label: `${m.name} (${m.email})` })),
          errors: refused?.errors,
        })}${termsFields(refused?.values ?? defaultTerms, refused?.errors, "grant")}<div class="actions"><button type="submit" class="btn">Grant access</button></div>`,
        html` class="stack"`,
      )
    : html`<p class="hint">Every member with the Member role already has access, or there is none. Add members on the <a href="${orgPath(org, "/members")}">Members</a> page.</p>`
}
</section>`;
}

/** The form a member uses to ask for access to server `serverId`. */
function requestForm(v: Viewer, org: Organization, serverId: string, refused?: TermsForm): Html {
  return postForm(
    orgPath(org, `/servers/${serverId}/request`),
    v.formToken,
    html`${formAlert(refused?.errors, ["actions", "constraints", "reason"])}${termsFields(refused?.values ?? defaultTerms, refused?.errors, "request")}
${textArea({ name: "reason", label: "Why (for the owners and admins, up to 500 characters)", value: refused?.reason ?? "", maxlength: 500, errors: refused?.errors })}
<div class="actions"><button type="submit" class="btn">Request access</button></div>`,
    html` class="stack"`,
  );
}

/** A member's page for a server they may not see: why, and the request form. */
export function noAccessPage(ctx: Context, v: Viewer, org: Organization, serverId: string, why: string, refused?: TermsForm, status = 403): void {
  render(
    ctx,
    v,
    {
      title: status === 200 ? "Ask for access" : "No access to this server",
      org,
      section: "servers",
      crumbs: [{ href: orgPath(org, "/servers"), label: "Servers" }],
      body: html`<section class="panel stack" aria-labelledby="request-heading">
<p class="problem">${why}</p>
<h2 id="request-heading">Ask for access</h2>
<p class="hint">The organization's owners and admins are told, and you are told what they decide. Your requests are on the <a href="${orgPath(org, "/access")}">Access</a> page.</p>
${requestForm(v, org, serverId, refused)}
</section>`,
    },
    status,
  );
}

/** Granting, revoking and asking; a refused form comes back on the page it came from. */
export function accessRoutes(router: Router, deps: DashboardDeps, showServer: ServerPage): void {
  router.post(
    "/app/o/:slug/servers/:id/grants",
    action(deps, async (ctx, v, form) => {
      const org = orgOf(v, ctx.params.slug);
      const grant = (terms: Terms) =>
        v.core.organizations.createAccessGrant({ organizationSlug: org.slug, serverId: ctx.params.id, userId: form.get("userId") ?? "", ...terms });
      const refused = (values: TermsValues, errors: FormErrors) => showServer(ctx, v, { grant: { values, errors } }, 400);
      if (await submitTerms(form, grant, refused, { grant_exists: "userId" })) done(ctx, orgPath(org, `/servers/${ctx.params.id}`), "grant-created");
    }),
  );

  router.post(
    "/app/o/:slug/servers/:id/grants/:userId/revoke",
    action(deps, async (ctx, v, form) => {
      const org = orgOf(v, ctx.params.slug);
      if (
        !confirmed(ctx, v, form, {
          title: "Revoke this member's access?",
          consequence: revokeConsequence,
          label: "Revoke",
          cancel: orgPath(org, `/servers/${ctx.params.id}`),
          org,
        })
      )
        return;
      await v.core.organizations.revokeAccessGrant({ organizationSlug: org.slug, serverId: ctx.params.id, userId: ctx.params.userId });
      done(ctx, orgPath(org, `/servers/${ctx.params.id}`), "grant-revoked");
    }),
  );

  router.post(
    "/app/o/:slug/servers/:id/request",
    action(deps, async (ctx, v, form) => {
      const org = orgOf(v, ctx.params.slug);
      const reason = form.get("reason") ?? "";
      const request = (terms: Terms) => v.core.organizations.createAccessRequest({ organizationSlug: org.slug, serverId: ctx.params.id, reason, ...terms });
      const refused = (values: TermsValues, errors: FormErrors) =>
        noAccessPage(ctx, v, org, ctx.params.id, "You have no access to this server yet.", { values, errors, reason }, 400);
      if (await submitTerms(form, request, refused, { request_pending: "reason" })) done(ctx, orgPath(org, "/access"), "access-requested");
    }),
  );
}
