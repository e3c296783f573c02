/**
 * The person's email address on the Security page: verified or not, and a button that mails a new
 * verification link (also offered where an unverified address stops something: the members list,
 * an invitation's page). Sending comes back to the page it was asked from.
 */
import type { Router } from "@koa/router";
import type { User } from "../../gen/outpost/auth/v1/resources_pb.js";
import { action, done, render, type ActionHandler, type DashboardDeps } from "./context.ts";
import { postForm } from "./forms.ts";
import { html, type Html } from "../html.ts";
import { safeReturnPath } from "../account-routes.ts";
import { securityPath } from "./account-sessions.ts";

const resendPath = `${securityPath}/verify-email`;

/** "unverified", beside an address that has not been confirmed. */
export const unverifiedBadge = html`<span class="badge unverified" title="This address has not been confirmed by a mailed link">unverified</span>`;

/** A button that mails the viewer a new link, then comes back to `returnTo` (a path on this site). */
export function resendVerificationForm(token: string, returnTo: string, label = "Send a new link"): Html {
  return postForm(
    resendPath,
    token,
    html`<input type="hidden" name="return_to" value="${returnTo}"><button type="submit" class="btn small">${label}</button>`,
    html` class="inline"`,
  );
}

/** The Security page's section about the address. */
export function emailSection(token: string, user: User): Html {
  return html`<section aria-labelledby="email-heading">
<h2 id="email-heading">Email address</h2>
<div class="panel stack">
<p><strong>${user.email}</strong> ${user.emailVerified ? html`<span class="badge">verified</span>` : unverifiedBadge}</p>
${
  user.emailVerified
    ? html`<p class="hint">Invitations sent to this address can be accepted, and organizations may send their email alerts to it.</p>`
    : html`<p>Until you confirm it with the link mailed to it, you cannot accept invitations to organizations or receive their email alerts. Sign-in works either way.</p>
${resendVerificationForm(token, securityPath)}
<p class="hint">Without an SMTP server, this Outpost cannot mail links: its operator can confirm your address with <span class="mono">outpost user verify-email ${user.email}</span>.</p>`
}
</div>
</section>`;
}

const resend: ActionHandler = async (ctx, v, form) => {
  const back = safeReturnPath(form.get("return_to")) || securityPath;
  const res = await v.core.auth.sendVerificationEmail({});
  if (res.emailSent) return done(ctx, back, "verification-sent");
  render(
    ctx,
    v,
    {
      title: "The link was not sent",
      area: "security",
      body: html`<div class="panel"><p class="problem">The email to ${res.email} was not sent: ${res.emailError}</p><p><a href="${back}">Back</a></p></div>`,
    },
    502,
  );
};

export function emailRoutes(router: Router, deps: DashboardDeps): void {
  router.post(resendPath, action(deps, resend));
}
