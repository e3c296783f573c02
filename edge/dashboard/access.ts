/**
 * The organization's Access page. Owners and admins decide pending requests (approve as asked or
 * narrowed, or deny with a reason) and see every grant with its actions, limits and state;
 * a member sees their own grants and requests, cancels a pending one, and asks for more.
 */
import type { Router } from "@koa/router";
import type { Context } from "koa";
import { AccessRequestStatus, type AccessRequest, type Organization } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { action, done, noticeOf, orgOf, page, render, type DashboardDeps, type Viewer } from "./context.ts";
import { formErrorsOrThrow, type FormErrors } from "./core.ts";
import { canManage, when } from "./format.ts";
import { dangerForm, formAlert, postForm, selectField, textField } from "./forms.ts";
import { html, type Html } from "../html.ts";
import { orgPath } from "./paths.ts";
import {
  actionNames,
  constraintWords,
  defaultTerms,
  grantSummary,
  submitTerms,
  termsFields,
  termsFromDraft,
  type Terms,
  type TermsForm,
  type TermsValues,
} from "./grant-views.ts";

/** A decision form that came back refused: which request, and what was typed. */
interface Refused {
  requestId: string;
  values?: TermsValues;
  denyReason?: string;
  errors: FormErrors;
}

const statusNames: Record<AccessRequestStatus, string> = {
  [AccessRequestStatus.UNSPECIFIED]: "unknown",
  [AccessRequestStatus.PENDING]: "Pending",
  [AccessRequestStatus.APPROVED]: "Approved",
  [AccessRequestStatus.DENIED]: "Denied",
  [AccessRequestStatus.CANCELLED]: "Cancelled",
};

function asked(r: AccessRequest): Html {
  return html`${actionNames(r.actions)} <span class="muted">(${constraintWords(r.constraints)})</span>`;
}

/** One pending request with its approve (narrowing) and deny forms. */
function pendingRequest(v: Viewer, org: Organization, r: AccessRequest, refused?: Refused): Html {
  const base = orgPath(org, `/access/requests/${r.id}`);
  const mine = refused?.requestId === r.id ? refused : undefined;
  const values = mine?.values ?? termsFromDraft(r.actions, r.constraints);
  return html`<article class="panel stack" aria-labelledby="req-${r.id}">
<h3 id="req-${r.id}">${r.userEmail} asks for ${r.serverName}</h3>
<p>${asked(r)}; asked ${when(r.createdAt)}.${r.reason ? html` Reason: “${r.reason}”` : ""}</p>
${formAlert(mine?.errors, ["actions", "constraints", "reason"])}
${postForm(
  `${base}/approve`,
  v.formToken,
  html`${termsFields(values, mine?.values ? mine.errors : undefined, `approve-${r.id}`)}<p class="hint">An approval may only remove actions or tighten limits. It replaces any grant the member has to this server.</p>
<div class="actions"><button type="submit" class="btn" aria-label="Approve ${r.userEmail}'s request for ${r.serverName}">Approve</button></div>`,
  html` class="stack"`,
)}
${postForm(
  `${base}/deny`,
  v.formToken,
  html`${textField({ name: "reason", label: "Reason for denying", value: mine?.denyReason ?? "", required: true, maxlength: 500, id: `deny-${r.id}`, errors: mine?.denyReason !== undefined ? mine.errors : undefined })}
<div class="actions"><button type="submit" class="btn danger" aria-label="Deny ${r.userEmail}'s request for ${r.serverName}">Deny</button></div>`,
  html` class="stack"`,
)}
</article>`;
}

function requestRow(v: Viewer, org: Organization, r: AccessRequest, cancellable: boolean): Html {
  const decided = r.decidedAt ? html`${when(r.decidedAt)} by ${r.decidedByEmail}${r.decisionReason ? html`: “${r.decisionReason}”` : ""}` : html`—`;
  const cancel = cancellable
    ? dangerForm({
        action: orgPath(org, `/access/requests/${r.id}/cancel`),
        token: v.formToken,
        label: "Cancel",
        ariaLabel: `Cancel the request for ${r.serverName}`,
        confirm: `Cancel your request for ${r.serverName}?`,
        consequence: "The owners and admins can no longer approve it; you may ask again.",
        buttonClass: "danger small",
      })
    : "";
  return html`<tr><td>${r.serverName}</td><td>${r.userEmail}</td><td>${asked(r)}</td><td>${statusNames[r.status]}</td><td>${decided}</td><td>${cancel}</td></tr>`;
}

function requestTable(v: Viewer, org: Organization, requests: AccessRequest[], caption: string, own: boolean): Html {
  if (!requests.length) return html`<p class="empty">No requests.</p>`;
  const rows = requests.map((r) => requestRow(v, org, r, own && r.status === AccessRequestStatus.PENDING));
  return html`<div class="table-wrap" role="region" tabindex="0" aria-label="${caption}"><table><caption class="sr-only">${caption}</caption>
<thead><tr><th scope="col">Server</th><th scope="col">Member</th><th scope="col">Asked for</th><th scope="col">Status</th><th scope="col">Decided</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
<tbody>${rows}</tbody></table></div>`;
}

async function managerBody(v: Viewer, org: Organization, refused?: Refused): Promise<Html> {
  const [pending, recent, { accessGrants }, { members }, { servers }] = await Promise.all([
    v.core.organizations.listAccessRequests({ organizationSlug: org.slug, status: AccessRequestStatus.PENDING, limit: 100 }),
    v.core.organizations.listAccessRequests({ organizationSlug: org.slug, limit: 20 }),
    v.core.organizations.listAccessGrants({ organizationSlug: org.slug }),
    v.core.organizations.listMembers({ organizationSlug: org.slug }),
    v.core.servers.listServers({ organizationSlug: org.slug }),
  ]);
  const emails = new Map(members.map((m) => [m.userId, m.email]));
  const names = new Map(servers.map((s) => [s.id, s.name]));
  const grants = accessGrants.map(
    (g) =>
      html`<tr><td>${emails.get(g.userId) ?? g.userId}</td><td><a href="${orgPath(org, `/servers/${g.serverId}`)}">${names.get(g.serverId) ?? g.serverId}</a></td><td>${grantSummary(g)}</td></tr>`,
  );
  return html`<section class="stack" aria-labelledby="pending-heading">
<h2 id="pending-heading">Pending requests</h2>
${pending.accessRequests.length ? pending.accessRequests.map((r) => pendingRequest(v, org, r, refused)) : html`<p class="empty">No request is waiting.</p>`}
</section>
<section class="panel stack" aria-labelledby="grants-heading">
<h2 id="grants-heading">Grants</h2>
<p class="hint">Grant or revoke on each server's page. Owners and admins need no grant.</p>
${
  grants.length
    ? html`<div class="table-wrap" role="region" tabindex="0" aria-label="Grants"><table><caption class="sr-only">Grants</caption><thead><tr><th scope="col">Member</th><th scope="col">Server</th><th scope="col">Access</th></tr></thead><tbody>${grants}</tbody></table></div>`
    : html`<p class="empty">No member has a grant.</p>`
}
</section>
<section class="panel stack" aria-labelledby="recent-heading">
<h2 id="recent-heading">Recent requests</h2>
${requestTable(v, org, recent.accessRequests, "Recent requests", false)}
</section>`;
}

async function memberBody(v: Viewer, org: Organization, ask?: Required<TermsForm>): Promise<Html> {
  const [current, { accessRequests }, { servers }] = await Promise.all([
    v.core.organizations.getCurrentMember({ organizationSlug: org.slug }),
    v.core.organizations.listAccessRequests({ organizationSlug: org.slug, limit: 50 }),
    v.core.servers.listServers({ organizationSlug: org.slug }),
  ]);
  const names = new Map([...accessRequests.map((r) => [r.serverId, r.serverName] as const), ...servers.map((s) => [s.id, s.name] as const)]);
  const grants = current.accessGrants.map(
    (g) => html`<li><a href="${orgPath(org, `/servers/${g.serverId}`)}">${names.get(g.serverId) ?? "A server"}</a>: ${grantSummary(g)}</li>`,
  );
  return html`<section class="panel stack" aria-labelledby="my-grants-heading">
<h2 id="my-grants-heading">Your access</h2>
${grants.length ? html`<ul class="list">${grants}</ul>` : html`<p class="empty">You have no grant yet.</p>`}
</section>
<section class="panel stack" aria-labelledby="my-requests-heading">
<h2 id="my-requests-heading">Your requests</h2>
${requestTable(v, org, accessRequests, "Your requests", true)}
</section>
<section class="panel stack" aria-labelledby="ask-heading">
<h2 id="ask-heading">Ask for more access</h2>
<p class="hint">For a server you cannot see yet, open the link an owner or admin gave you: its page has this form.</p>
${
  servers.length
    ? postForm(
        orgPath(org, "/access/request"),
        v.formToken,
        html`${formAlert(ask?.errors, ["serverId", "actions", "constraints", "reason"])}${selectField({ name: "serverId", label: "Server", options: servers.map((s) => ({ value: s.id, label: s.name })) })}
${termsFields(ask?.values ?? defaultTerms, ask?.errors, "ask")}
${textField({ name: "reason", label: "Why (up to 500 characters)", value: ask?.reason ?? "", maxlength: 500, errors: ask?.errors })}
<div class="actions"><button type="submit" class="btn">Request access</button></div>`,
        html` class="stack"`,
      )
    : html`<p class="empty">You see no server yet.</p>`
}
</section>`;
}

async function accessPage(ctx: Context, v: Viewer, state: { refused?: Refused; ask?: Required<TermsForm> } = {}, status = 200): Promise<void> {
  const org = orgOf(v, ctx.params.slug);
  const manage = canManage(org.role);
  render(
    ctx,
    v,
    {
      title: "Access",
      lede: manage ? "Members' server grants and their requests for more." : "What you may do on this organization's servers, and your requests for more.",
      org,
      section: "access",
      notice: noticeOf(ctx),
      body: manage ? await managerBody(v, org, state.refused) : await memberBody(v, org, state.ask),
    },
    status,
  );
}

export function accessPageRoutes(router: Router, deps: DashboardDeps): void {
  router.get(
    "/app/o/:slug/access",
    page(deps, (ctx, v) => accessPage(ctx, v)),
  );
  const back = (ctx: Context, v: Viewer, notice: string) => done(ctx, orgPath(orgOf(v, ctx.params.slug), "/access"), notice);

  router.post(
    "/app/o/:slug/access/requests/:id/approve",
    action(deps, async (ctx, v, form) => {
      const approve = (terms: Terms) => v.core.organizations.approveAccessRequest({ organizationSlug: ctx.params.slug, requestId: ctx.params.id, ...terms });
      const refused = (values: TermsValues, errors: FormErrors) => accessPage(ctx, v, { refused: { requestId: ctx.params.id, values, errors } }, 400);
      if (await submitTerms(form, approve, refused)) back(ctx, v, "request-approved");
    }),
  );
  router.post(
    "/app/o/:slug/access/requests/:id/deny",
    action(deps, async (ctx, v, form) => {
      const reason = form.get("reason") ?? "";
      try {
        await v.core.organizations.denyAccessRequest({ organizationSlug: ctx.params.slug, requestId: ctx.params.id, reason });
        back(ctx, v, "request-denied");
      } catch (error) {
        await accessPage(ctx, v, { refused: { requestId: ctx.params.id, denyReason: reason, errors: formErrorsOrThrow(error) } }, 400);
      }
    }),
  );
  router.post(
    "/app/o/:slug/access/requests/:id/cancel",
    action(deps, async (ctx, v) => {
      await v.core.organizations.cancelAccessRequest({ organizationSlug: ctx.params.slug, requestId: ctx.params.id });
      back(ctx, v, "request-cancelled");
    }),
  );
  router.post(
    "/app/o/:slug/access/request",
    action(deps, async (ctx, v, form) => {
      const reason = form.get("reason") ?? "";
      const request = (terms: Terms) =>
        v.core.organizations.createAccessRequest({ organizationSlug: ctx.params.slug, serverId: form.get("serverId") ?? "", reason, ...terms });
      const refused = (values: TermsValues, errors: FormErrors) => accessPage(ctx, v, { ask: { values, reason, errors } }, 400);
      if (await submitTerms(form, request, refused, { request_pending: "serverId" })) back(ctx, v, "access-requested");
    }),
  );
}
