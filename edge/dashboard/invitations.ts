/**
 * Invitations in the dashboard: the members page's pending invitations and invite form (the
 * link shown once after inviting), and the page the link opens, where the invited person joins.
 * The link carries its secret in the query string (never logged, and the pages send no Referer);
 * someone signed out is sent to sign in or sign up and back (the sign-in redirect's return_to).
 */
import type { Router } from "@koa/router";
import type { Context } from "koa";
import { InvitationStatus, Role, type Invitation, type Organization } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { action, confirmed, done, noticeOf, orgOf, page, render, type ActionHandler, type DashboardDeps, type Viewer } from "./context.ts";
import { formErrorsOrThrow, type FormErrors } from "./core.ts";
import { roleName, when } from "./format.ts";
import { dangerForm, formAlert, postForm, selectField, textField } from "./forms.ts";
import { secretBlock } from "./layout.ts";
import { html, type Html } from "../html.ts";
import { formTokenInput } from "../form-token.ts";
import { orgPath } from "./paths.ts";
import { resendVerificationForm } from "./account-email.ts";

/** The invite form's values and the API's messages, when it was refused. */
export interface InviteForm {
  values: { email?: string; role?: string };
  errors: FormErrors;
}

const acceptPath = "/app/invitations/accept";
const roleByName: Record<string, Role> = { admin: Role.ADMIN, member: Role.MEMBER };

/** The members page's part for managers: pending invitations with revoke buttons, and the invite form. */
export function invitationsSection(v: Viewer, org: Organization, invitations: readonly Invitation[], refused?: InviteForm): Html {
  const rows = invitations.map(
    (i) =>
      html`<tr><td>${i.email}</td><td>${roleName(i.role)}</td><td>${i.inviterEmail || html`<span class="muted">—</span>`}</td><td>${when(i.createdAt)}</td><td>${when(i.expiresAt)}</td><td class="row-actions">${dangerForm(
        {
          action: orgPath(org, `/invitations/${i.id}/revoke`),
          token: v.formToken,
          label: "Revoke",
          ariaLabel: `Revoke the invitation of ${i.email}`,
          confirm: `Revoke the invitation of ${i.email}?`,
          consequence: "Its link stops working at once.",
          buttonClass: "danger small",
        },
      )}</td></tr>`,
  );
  const errors = refused?.errors;
  return html`<h2 id="invitations-heading">Pending invitations</h2>
${
  invitations.length
    ? html`<div class="table-wrap" role="region" tabindex="0" aria-labelledby="invitations-heading"><table><caption class="sr-only">Pending invitations</caption><thead><tr><th scope="col">Email</th><th scope="col">Role</th><th scope="col">Invited by</th><th scope="col">Sent</th><th scope="col">Expires</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead><tbody>${rows}</tbody></table></div>`
    : html`<p class="empty">No pending invitations.</p>`
}
<h2 id="invite-heading">Invite someone new</h2>
${postForm(
  orgPath(org, "/invitations"),
  v.formToken,
  html`${formAlert(errors, ["email", "role"])}
${textField({ name: "email", id: "f-invite-email", label: "Address to invite", type: "email", value: refused?.values.email, required: true, autocomplete: "off", hint: "They need no account yet: the link lets them sign up with this address, and join once they confirm it. It works once, for 7 days.", errors })}
${selectField({
  name: "role",
  id: "f-invite-role",
  label: "Invited as",
  value: refused?.values.role ?? "member",
  options: [{ value: "member", label: "Member — sees granted servers" }, ...(org.role === Role.OWNER ? [{ value: "admin", label: "Admin — manages everything" }] : [])],
  errors,
})}
<div class="actions"><button type="submit" class="btn primary">Send invitation</button></div>`,
  html` class="panel stack" aria-labelledby="invite-heading"`,
)}`;
}

/** Renders the members page again with the invite form's refusal (organizations.ts provides it). */
export type MembersPage = (ctx: Context, v: Viewer, invite: InviteForm, status: number) => Promise<void>;

/** The page after an invitation is made (by the invite form, or the add form for someone it cannot add at once): the link, shown once. */
export function invitationSentPage(
  ctx: Context,
  v: Viewer,
  org: Organization,
  res: { invitation?: Invitation; link: string; emailSent: boolean; emailError: string },
): void {
  const email = res.invitation!.email;
  render(ctx, v, {
    title: `Invitation for ${email}`,
    org,
    section: "members",
    lede: res.emailSent
      ? html`The link was emailed to ${email}. You can also send it yourself.`
      : html`The email was not sent (${res.emailError}). Send the link to ${email} yourself.`,
    body: html`<section class="panel stack reveal" aria-labelledby="link-heading">
<h2 id="link-heading">Invitation link</h2>
${secretBlock("invitation-link", "Link", res.link, "It is shown only this once: Outpost keeps only a hash. Whoever signs in with the invited address, once it is verified, can use it, once, within 7 days.")}
<div class="actions"><a class="btn primary" href="${orgPath(org, "/members")}">Done</a></div>
</section>`,
  });
}

const invite =
  (membersPage: MembersPage): ActionHandler =>
  async (ctx, v, form) => {
    const org = orgOf(v, ctx.params.slug);
    const email = (form.get("email") ?? "").trim();
    const role = form.get("role") ?? "member";
    try {
      invitationSentPage(ctx, v, org, await v.core.organizations.inviteMember({ organizationSlug: org.slug, email, role: roleByName[role] ?? Role.UNSPECIFIED }));
    } catch (error) {
      await membersPage(ctx, v, { values: { email, role }, errors: formErrorsOrThrow(error, { invitation_pending: "email", failed_precondition: "email" }) }, 400);
    }
  };

const revoke: ActionHandler = async (ctx, v, form) => {
  const org = orgOf(v, ctx.params.slug);
  if (
    !confirmed(ctx, v, form, { title: "Revoke this invitation?", consequence: "Its link stops working at once.", label: "Revoke", cancel: orgPath(org, "/members"), org })
  )
    return;
  await v.core.organizations.revokeInvitation({ organizationSlug: org.slug, invitationId: ctx.params.invitationId });
  done(ctx, orgPath(org, "/members"), "invitation-revoked");
};

const closed: Partial<Record<InvitationStatus, string>> = {
  [InvitationStatus.ACCEPTED]: "This invitation has already been used.",
  [InvitationStatus.REVOKED]: "This invitation was revoked. Ask for a new one.",
  [InvitationStatus.EXPIRED]: "This invitation has expired. Ask for a new one.",
};

async function acceptPage(ctx: Context, v: Viewer): Promise<void> {
  const token = typeof ctx.query.token === "string" ? ctx.query.token : "";
  const shown = await v.core.organizations.getInvitation({ token });
  const role = roleName(shown.role).toLowerCase();
  const inviter = shown.inviterEmail ? html`${shown.inviterName || shown.inviterEmail} (${shown.inviterEmail})` : "Someone";
  const problem =
    closed[shown.status] ??
    (shown.forCaller
      ? ""
      : `This invitation is for another email address. You are signed in as ${v.user.email}: sign out and sign in (or sign up) with the address it was sent to.`);
  render(ctx, v, {
    title: `Join ${shown.organizationName}`,
    notice: noticeOf(ctx),
    lede: html`${inviter} invited you to join ${shown.organizationName} as ${role === "admin" ? "an admin" : "a member"}.`,
    body: problem
      ? html`<div class="panel"><p class="problem">${problem}</p><p><a href="/app">Back to the dashboard</a></p></div>`
      : !v.user.emailVerified
        ? html`<div class="panel stack"><p class="problem">Confirm your address ${v.user.email} before you join: open the link Outpost mailed to it, then come back to this page. Without email, this Outpost's operator can confirm it with <span class="mono">outpost user verify-email ${v.user.email}</span>.</p>
${resendVerificationForm(v.formToken, ctx.url, "Mail me a new link")}
<p><a href="/app">Not now</a></p></div>`
        : html`<form method="post" action="${acceptPath}" class="panel stack" aria-labelledby="join-heading">
${formTokenInput(v.formToken)}
<input type="hidden" name="token" value="${token}">
<h2 id="join-heading">Join ${shown.organizationName} as ${role}</h2>
<p>The invitation expires ${when(shown.expiresAt)}.</p>
<div class="actions"><button type="submit" class="btn primary">Join ${shown.organizationName}</button> <a class="btn ghost" href="/app">Not now</a></div>
</form>`,
  });
}

const accept: ActionHandler = async (ctx, v, form) => {
  const { organization } = await v.core.organizations.acceptInvitation({ token: form.get("token") ?? "" });
  done(ctx, `/app/o/${encodeURIComponent(organization!.slug)}`, "invitation-accepted");
};

export function invitationRoutes(router: Router, deps: DashboardDeps, membersPage: MembersPage): void {
  router.get(acceptPath, page(deps, acceptPage));
  router.post(acceptPath, action(deps, accept));
  router.post("/app/o/:slug/invitations", action(deps, invite(membersPage)));
  router.post("/app/o/:slug/invitations/:invitationId/revoke", action(deps, revoke));
}
