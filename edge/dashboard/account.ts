/**
 * Account → Security: the person's password and sessions, API keys, and the Account OAuth apps
 * they consented to.
 */
import type { Router } from "@koa/router";
import type { Context } from "koa";
import { ConnectError } from "@connectrpc/connect";
import type { ApiKey, Consent } from "../../gen/outpost/auth/v1/resources_pb.js";
import type { ActivityEvent } from "../../gen/outpost/activity/v1/activity_service_pb.js";
import { httpStatus, retryHeaders } from "../errors.ts";
import { action, confirmed, done, noticeOf, page, render, type ActionHandler, type DashboardDeps, type Viewer } from "./context.ts";
import { formErrorsOrThrow, type FormErrors } from "./core.ts";
import { when } from "./format.ts";
import { dangerForm, formAlert, postForm, selectField, textField } from "./forms.ts";
import { eventTable } from "./activity-table.ts";
import { html, type Html } from "../html.ts";
import { secretBlock } from "./layout.ts";
import { passwordSection, securityPath, sessionsSection } from "./account-sessions.ts";
import { pushRoutes, pushSection } from "./account-push.ts";
import { emailRoutes, emailSection } from "./account-email.ts";

const expiries = [
  { value: "30", label: "30 days" },
  { value: "7", label: "7 days" },
  { value: "90", label: "90 days" },
  { value: "365", label: "365 days" },
  { value: "none", label: "No expiry" },
];

/** An API key form's expiry ("none" or a number of days) as the requests take it, personal and organization keys alike. */
export function apiKeyExpiry(value: string): { case: undefined; value?: undefined } | { case: "expiresInDays"; value: number } {
  return value === "none" ? { case: undefined } : { case: "expiresInDays", value: Number(value) };
}

/** What a refused form brings back to the page: the API key form's values, or either form's errors. */
interface Refused {
  apiKey?: { values: { name?: string; expiry?: string }; errors: FormErrors };
  password?: FormErrors;
}

/** The "API keys" section: the caller's keys, each with its revoke button, and the form that creates one. */
function apiKeysSection(v: Viewer, apiKeys: readonly ApiKey[], refused?: Refused["apiKey"]): Html {
  const values = refused?.values;
  const errors = refused?.errors;
  const keyRows = apiKeys.map(
    (k) =>
      html`<tr><td>${k.name}${k.organizationSlug ? html` <span class="badge" title="Works for this organization only">${k.organizationSlug}</span>` : ""}</td><td class="mono">${k.prefix}…</td><td>${when(k.createdAt)}</td><td>${when(k.expiresAt, "Never")}</td><td>${when(k.lastUsedAt, "Never")}</td><td class="row-actions">${dangerForm(
        {
          action: `${securityPath}/api-keys/${k.id}/revoke`,
          token: v.formToken,
          label: "Revoke",
          ariaLabel: `Revoke key ${k.name}`,
          confirm: `Revoke the API key "${k.name}"?`,
          consequence: "Scripts using it get 401 from the next request on. This cannot be undone.",
          buttonClass: "danger small",
        },
      )}</td></tr>`,
  );
  return html`<section aria-labelledby="keys-heading">
<h2 id="keys-heading">API keys</h2>
<p>An API key acts as you in the HTTP API (header <span class="mono">X-API-Key</span>), with your access only.</p>
${
  apiKeys.length
    ? html`<div class="table-wrap" role="region" tabindex="0" aria-label="Your API keys"><table><caption class="sr-only">Your API keys</caption><thead><tr><th scope="col">Name</th><th scope="col">Prefix</th><th scope="col">Created</th><th scope="col">Expires</th><th scope="col">Last used</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead><tbody>${keyRows}</tbody></table></div>`
    : html`<p class="empty">No API keys.</p>`
}
<h3 id="create-key-heading">Create an API key</h3>
${postForm(
  `${securityPath}/api-keys`,
  v.formToken,
  html`${formAlert(errors, ["name", "expiry"])}
${textField({ name: "name", label: "Key name", value: values?.name, required: true, maxlength: 64, hint: "What uses it, e.g. “deploy script”.", errors })}
${selectField({ name: "expiry", label: "Expires", value: values?.expiry ?? "30", options: expiries, errors, apiField: "expiresInDays" })}
<div class="actions"><button type="submit" class="btn primary">Create API key</button></div>`,
  html` class="panel stack" aria-labelledby="create-key-heading"`,
)}
</section>`;
}

/** The "Apps signed in with Outpost" section: the Account OAuth apps the person consented to, each revocable. */
function consentsSection(v: Viewer, apps: readonly Consent[]): Html {
  const consents: Html = apps.length
    ? html`<div class="table-wrap" role="region" tabindex="0" aria-label="Apps you let sign you in"><table><caption class="sr-only">Apps you let sign you in</caption><thead><tr><th scope="col">App</th><th scope="col">Can read</th><th scope="col">Since</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead><tbody>${apps.map(
        (a) =>
          html`<tr><td>${a.clientName} <span class="muted mono">${a.clientId}</span></td><td>${a.scopes.join(", ")}</td><td>${when(a.createdAt)}</td><td class="row-actions">${dangerForm(
            {
              action: `${securityPath}/consents/${a.clientId}/revoke`,
              token: v.formToken,
              label: "Revoke",
              ariaLabel: `Revoke consent for ${a.clientName}`,
              confirm: `Revoke your consent to ${a.clientName}?`,
              consequence: "It asks for your consent again the next time you sign in to it, and the tokens it holds for you stop working at once.",
              buttonClass: "danger small",
            },
          )}</td></tr>`,
      )}</tbody></table></div>`
    : html`<p class="empty">You have not let any app sign you in with Outpost.</p>`;
  return html`<section aria-labelledby="consents-heading">
<h2 id="consents-heading">Apps signed in with Outpost</h2>
${consents}
</section>`;
}

/** The "Recent activity" section: the last 20 events done as the person. */
function myActivitySection(events: readonly ActivityEvent[]): Html {
  return html`<section aria-labelledby="my-activity-heading">
<h2 id="my-activity-heading">Recent activity of your account</h2>
<p>The last 20 things done as you — in the dashboard, through your API keys, or by signing in to apps.</p>
${eventTable(events, "Recent activity of your account")}
</section>`;
}

/** The Security page, section by section; `refused` brings back a refused form with its values and errors. */
async function securityPage(ctx: Context, v: Viewer, refused: Refused = {}, status = 200): Promise<void> {
  const [{ sessions }, { apiKeys }, { consents: apps }, { events }, { subscriptions }] = await Promise.all([
    v.core.auth.listSessions({}),
    v.core.auth.listApiKeys({}),
    v.core.auth.listConsents({}),
    v.core.activity.listMyActivity({ limit: 20 }),
    v.core.pwa.listSubscriptions({}),
  ]);
  render(
    ctx,
    v,
    {
      title: "Security",
      area: "security",
      notice: noticeOf(ctx),
      scripts: ["push.js"],
      lede: html`Signed in as ${v.user.name} (${v.user.email}).`,
      body: html`${emailSection(v.formToken, v.user)}
${passwordSection(v.formToken, refused.password)}
${sessionsSection(v.formToken, sessions)}
${apiKeysSection(v, apiKeys, refused.apiKey)}
${pushSection(v.formToken, subscriptions, ctx.get("user-agent"))}
${consentsSection(v, apps)}
${myActivitySection(events)}`,
    },
    status,
  );
}

const createApiKey: ActionHandler = async (ctx, v, form) => {
  const name = (form.get("name") ?? "").trim();
  const expiry = form.get("expiry") ?? "30";
  try {
    const res = await v.core.auth.createApiKey({
      name,
      expiry: apiKeyExpiry(expiry),
    });
    render(ctx, v, {
      title: `API key "${res.apiKey!.name}" created`,
      area: "security",
      crumbs: [{ href: securityPath, label: "Security" }],
      lede: "Send it as the X-API-Key header. It acts as you, with your access.",
      body: html`<section class="panel stack reveal" aria-labelledby="key-heading">
<h2 id="key-heading">Your new API key</h2>
${secretBlock("api-key", "API key", res.key, "It is shown only this once: Outpost keeps only a hash. If you lose it, revoke it and create another.")}
<p class="hint">Example: <span class="mono">curl -H "X-API-Key: $KEY" ${v.deps.accountBaseUrl.origin}/api/http/organizations/listOrganizations</span></p>
<div class="actions"><a class="btn primary" href="${securityPath}">Done</a></div>
</section>`,
    });
  } catch (error) {
    await securityPage(ctx, v, { apiKey: { values: { name, expiry }, errors: formErrorsOrThrow(error) } }, 400);
  }
};

const changePassword: ActionHandler = async (ctx, v, form) => {
  try {
    await v.core.auth.changePassword({ currentPassword: form.get("currentPassword") ?? "", newPassword: form.get("newPassword") ?? "" });
    done(ctx, securityPath, "password-changed");
  } catch (error) {
    const errors = formErrorsOrThrow(error);
    // A wrong current password counts as a failed sign-in: past the limit, 429 with Retry-After.
    for (const [name, value] of Object.entries(retryHeaders(error) ?? {})) ctx.set(name, value);
    await securityPage(ctx, v, { password: errors }, error instanceof ConnectError ? httpStatus(error.code) : 400);
  }
};

/** A confirmed action that revokes something of the caller's, then back to the Security page. */
function revoking(question: { title: string; consequence: string; label: string }, revoke: (v: Viewer, id: string) => Promise<unknown>, notice: string): ActionHandler {
  return async (ctx, v, form) => {
    if (!confirmed(ctx, v, form, { ...question, cancel: securityPath })) return;
    await revoke(v, ctx.params.id ?? ctx.params.clientId);
    done(ctx, securityPath, notice);
  };
}

export function accountRoutes(router: Router, deps: DashboardDeps): void {
  router.get("/app/account", (ctx) => ctx.redirect(securityPath));
  router.get(
    securityPath,
    page(deps, (ctx, v) => securityPage(ctx, v)),
  );
  router.post(`${securityPath}/api-keys`, action(deps, createApiKey));
  router.post(`${securityPath}/password`, action(deps, changePassword));
  pushRoutes(router, deps);
  emailRoutes(router, deps);
  router.post(
    `${securityPath}/sessions/revoke-others`,
    action(
      deps,
      revoking(
        {
          title: "Revoke every other session?",
          consequence: "Every other browser signed in as you is signed out at once. This one stays signed in.",
          label: "Revoke all other sessions",
        },
        (v) => v.core.auth.revokeOtherSessions({}),
        "sessions-revoked",
      ),
    ),
  );
  router.post(
    `${securityPath}/sessions/:id/revoke`,
    action(
      deps,
      revoking(
        { title: "Revoke this session?", consequence: "That browser is signed out at once and has to sign in again.", label: "Revoke" },
        (v, sessionId) => v.core.auth.revokeSession({ sessionId }),
        "session-revoked",
      ),
    ),
  );
  router.post(
    `${securityPath}/api-keys/:id/revoke`,
    action(
      deps,
      revoking(
        { title: "Revoke this API key?", consequence: "Scripts using it get 401 from the next request on. This cannot be undone.", label: "Revoke" },
        (v, apiKeyId) => v.core.auth.revokeApiKey({ apiKeyId }),
        "key-revoked",
      ),
    ),
  );
  router.post(
    `${securityPath}/consents/:clientId/revoke`,
    action(
      deps,
      revoking(
        { title: "Revoke your consent to this app?", consequence: "It asks for your consent again the next time you sign in to it.", label: "Revoke" },
        (v, clientId) => v.core.auth.revokeConsent({ clientId }),
        "consent-revoked",
      ),
    ),
  );
}
