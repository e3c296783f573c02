/** The platform admin area: Account OAuth clients (apps that sign dashboard users in). */
import type { Router } from "@koa/router";
import type { Context } from "koa";
import { Code } from "@connectrpc/connect";
import type { AccountOAuthClient } from "../../gen/outpost/admin/v1/admin_service_pb.js";
import { action, confirmed, done, noticeOf, page, PageError, render, type ActionHandler, type DashboardDeps, type PageHandler, type Viewer } from "./context.ts";
import { formErrorsOrThrow, hasCode, type FormErrors } from "./core.ts";
import { when } from "./format.ts";
import { choiceGroup, dangerForm, formAlert, postForm, textArea, textField } from "./forms.ts";
import { eventTable } from "./activity-table.ts";
import { html, type Html } from "../html.ts";
import { copyValue, secretBlock } from "./layout.ts";
import {
  createOptions,
  defaultOptionValues,
  optionFieldNames,
  optionFields,
  optionValuesFrom,
  optionValuesOf,
  updateOptions,
  type OptionValues,
} from "./account-oauth-options.ts";

const adminPath = "/app/admin";

const isPublic = (c: AccountOAuthClient) => optionValuesFrom(c).authMethod === "none";

interface Values extends OptionValues {
  name: string;
  redirectUris: string;
  skipConsent: boolean;
}

function requireAdmin(v: Viewer): void {
  if (!v.user.platformAdmin) throw new PageError(403, "The admin area is for platform admins.");
}

const adminPage = (deps: DashboardDeps, handler: PageHandler) => page(deps, (ctx, v) => (requireAdmin(v), handler(ctx, v)));
const adminAction = (deps: DashboardDeps, handler: ActionHandler) => action(deps, (ctx, v, form) => (requireAdmin(v), handler(ctx, v, form)));

function valuesOf(form: URLSearchParams): Values {
  return { name: (form.get("name") ?? "").trim(), redirectUris: form.get("redirectUris") ?? "", skipConsent: form.get("skipConsent") === "yes", ...optionValuesOf(form) };
}

const lines = (text: string) =>
  text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter(Boolean);

function clientFields(values: Values, errors?: FormErrors): Html {
  return html`${formAlert(errors, ["name", "redirectUris", "skipConsent", ...optionFieldNames])}
${textField({ name: "name", label: "App name", value: values.name, required: true, maxlength: 80, hint: "Shown to people on the consent screen.", errors })}
${textArea({ name: "redirectUris", label: "Redirect URIs", value: values.redirectUris, required: true, rows: 3, hint: "One per line, 1 to 16, matched exactly. https, except on localhost.", errors })}
${choiceGroup({
  name: "skipConsent",
  legend: "Consent",
  type: "checkbox",
  options: [{ value: "yes", label: "First-party app: do not ask people for consent" }],
  checked: new Set(values.skipConsent ? ["yes"] : []),
  errors,
})}
${optionFields(values, errors)}`;
}

/** The list, or a note when this core does not serve Account OAuth clients yet. */
async function listPage(ctx: Context, v: Viewer, values?: Values, errors?: FormErrors, status = 200): Promise<void> {
  const [{ clients }, { events }] = await Promise.all([v.core.admin.listAccountOAuthClients({}), v.core.activity.listPlatformActivity({ limit: 30 })]);
  render(
    ctx,
    v,
    {
      title: "Admin",
      area: "admin",
      notice: noticeOf(ctx),
      lede: html`Account OAuth clients: apps that sign Outpost users in through the issuer at <span class="mono">${v.deps.accountBaseUrl.origin}/api/auth</span>.`,
      body: html`<h2 id="clients-heading">Account OAuth clients</h2>
${
  clients.length
    ? html`<div class="table-wrap" role="region" tabindex="0" aria-label="Account OAuth clients"><table><caption class="sr-only">Account OAuth clients</caption><thead><tr><th scope="col">Name</th><th scope="col">Client ID</th><th scope="col">State</th><th scope="col">Created</th></tr></thead><tbody>${clients.map(
        (c) =>
          html`<tr><td><a href="${adminPath}/clients/${c.clientId}">${c.name}</a></td><td class="mono">${c.clientId}</td><td>${c.disabled ? html`<span class="status offline">Disabled</span>` : html`<span class="status online">Enabled</span>`}</td><td>${when(c.createdAt)}</td></tr>`,
      )}</tbody></table></div>`
    : html`<p class="empty">No Account OAuth clients yet.</p>`
}
<h2 id="create-heading">Register an app</h2>
${postForm(`${adminPath}/clients`, v.formToken, html`${clientFields(values ?? { name: "", redirectUris: "", skipConsent: false, ...defaultOptionValues }, errors)}<div class="actions"><button type="submit" class="btn primary">Create client</button></div>`, html` class="panel stack" aria-labelledby="create-heading"`)}
<h2 id="platform-activity-heading">Platform activity</h2>
<p>The last 30 events that belong to no organization: accounts, Account OAuth clients and consents, signing keys, plans.</p>
${eventTable(events, "Platform activity")}`,
    },
    status,
  );
}

async function clientPage(ctx: Context, v: Viewer, values?: Values, errors?: FormErrors, status = 200): Promise<void> {
  const { client } = await v.core.admin.getAccountOAuthClient({ clientId: ctx.params.clientId });
  const c = client!;
  const base = `${adminPath}/clients/${c.clientId}`;
  render(
    ctx,
    v,
    {
      title: c.name,
      area: "admin",
      notice: noticeOf(ctx),
      crumbs: [{ href: adminPath, label: "Admin" }],
      lede: html`${c.disabled ? html`<span class="status offline">Disabled</span> ` : html`<span class="status online">Enabled</span> `}Created ${when(c.createdAt)}`,
      body: html`<section class="panel stack" aria-labelledby="connect-heading">
<h2 id="connect-heading">Connect the app</h2>
${copyValue("client-id", "Client ID", c.clientId)}
${copyValue("issuer-url", "Issuer URL", `${v.deps.accountBaseUrl.origin}/api/auth`)}
<dl class="facts"><div><dt>Client secret</dt><dd>${
        isPublic(c) ? "None: a public client" : html`<span class="mono">${c.clientSecretPrefix}…</span> (shown only when created or rotated)`
      }</dd></div><div><dt>Scopes</dt><dd class="mono">${c.allowedScopes.join(" ")}</dd></div>${c.uri ? html`<div><dt>Home page</dt><dd class="mono">${c.uri}</dd></div>` : ""}</dl>
</section>
<section class="panel stack" aria-labelledby="edit-heading">
<h2 id="edit-heading">Edit</h2>
${postForm(base, v.formToken, html`${clientFields(values ?? { name: c.name, redirectUris: c.redirectUris.join("\n"), skipConsent: c.skipConsent, ...optionValuesFrom(c) }, errors)}<div class="actions"><button type="submit" class="btn primary">Save changes</button></div>`, html` class="stack"`)}
</section>
<section class="panel stack" aria-labelledby="secret-heading">
<h2 id="secret-heading">Client secret</h2>
<p>Rotating replaces the secret: the current one stops working at once.</p>
${dangerForm({ action: `${base}/rotate-secret`, token: v.formToken, label: "Rotate secret", confirm: `Rotate the secret of ${c.name}?`, consequence: "The current secret stops working at once." })}
</section>
<section class="panel stack danger-zone" aria-labelledby="state-heading">
<h2 id="state-heading">Disable or delete</h2>
<div class="actions">
${
  c.disabled
    ? postForm(`${base}/enable`, v.formToken, html`<button type="submit" class="btn">Enable client</button>`, html` class="inline"`)
    : dangerForm({
        action: `${base}/disable`,
        token: v.formToken,
        label: "Disable client",
        confirm: `Disable ${c.name}?`,
        consequence: "It starts no new authorizations and exchanges no codes.",
        buttonClass: "danger-outline",
      })
}
${dangerForm({ action: `${base}/delete`, token: v.formToken, label: "Delete client", confirm: `Delete ${c.name}?`, consequence: "Its consents, codes and tokens are deleted with it. This cannot be undone." })}
</div>
</section>`,
    },
    status,
  );
}

function secretPage(ctx: Context, v: Viewer, c: { clientId: string; name: string }, secret: string, created: boolean): void {
  render(ctx, v, {
    title: created ? `Client "${c.name}" created` : `New secret for "${c.name}"`,
    area: "admin",
    crumbs: [{ href: adminPath, label: "Admin" }],
    body: html`<section class="panel stack reveal" aria-labelledby="secret-heading">
<h2 id="secret-heading">Client credentials</h2>
${copyValue("client-id", "Client ID", c.clientId)}
${secret ? secretBlock("client-secret", "Client secret", secret, "It is shown only this once: Outpost keeps only a hash. If you lose it, rotate it.") : html`<p>A public client has no secret: it sends its client ID only, with PKCE S256.</p>`}
<div class="actions"><a class="btn primary" href="${adminPath}/clients/${c.clientId}">Go to the client</a></div>
</section>`,
  });
}

const createClient: ActionHandler = async (ctx, v, form) => {
  const values = valuesOf(form);
  try {
    const res = await v.core.admin.createAccountOAuthClient({
      name: values.name,
      redirectUris: lines(values.redirectUris),
      skipConsent: values.skipConsent,
      ...createOptions(values),
    });
    secretPage(ctx, v, { clientId: res.clientId, name: res.client?.name ?? values.name }, res.clientSecret, true);
  } catch (error) {
    await listPage(ctx, v, values, formErrorsOrThrow(error), 400);
  }
};

const updateClient: ActionHandler = async (ctx, v, form) => {
  const values = valuesOf(form);
  try {
    await v.core.admin.updateAccountOAuthClient({
      clientId: ctx.params.clientId,
      name: values.name,
      redirectUris: { uris: lines(values.redirectUris) },
      skipConsent: values.skipConsent,
      ...updateOptions(values),
    });
    done(ctx, `${adminPath}/clients/${ctx.params.clientId}`, "client-updated");
  } catch (error) {
    if (hasCode(error, Code.NotFound)) throw error;
    await clientPage(ctx, v, values, formErrorsOrThrow(error), 400);
  }
};

/** The confirmation page of a destructive action on the client, until the form says confirmed. */
function confirmedOnClient(ctx: Context, v: Viewer, form: URLSearchParams, question: { title: string; consequence: string; label: string }): boolean {
  return confirmed(ctx, v, form, { ...question, cancel: `${adminPath}/clients/${ctx.params.clientId}` });
}

const rotateSecret: ActionHandler = async (ctx, v, form) => {
  if (!confirmedOnClient(ctx, v, form, { title: "Rotate the client secret?", consequence: "The current secret stops working at once.", label: "Rotate secret" })) return;
  const res = await v.core.admin.rotateAccountOAuthClientSecret({ clientId: ctx.params.clientId });
  const { client } = await v.core.admin.getAccountOAuthClient({ clientId: res.clientId });
  secretPage(ctx, v, { clientId: res.clientId, name: client?.name ?? res.clientId }, res.clientSecret, false);
};

const setDisabled =
  (disabled: boolean): ActionHandler =>
  async (ctx, v, form) => {
    if (
      disabled &&
      !confirmedOnClient(ctx, v, form, { title: "Disable this client?", consequence: "It starts no new authorizations and exchanges no codes.", label: "Disable client" })
    )
      return;
    await v.core.admin.updateAccountOAuthClient({ clientId: ctx.params.clientId, disabled });
    done(ctx, `${adminPath}/clients/${ctx.params.clientId}`, disabled ? "client-disabled" : "client-enabled");
  };

const deleteClient: ActionHandler = async (ctx, v, form) => {
  if (
    !confirmedOnClient(ctx, v, form, {
      title: "Delete this client?",
      consequence: "Its consents, codes and tokens are deleted with it. This cannot be undone.",
      label: "Delete client",
    })
  )
    return;
  await v.core.admin.deleteAccountOAuthClient({ clientId: ctx.params.clientId });
  done(ctx, adminPath, "client-deleted");
};

/** Every admin route: each page and action checks the caller is a platform admin first. */
export function adminRoutes(router: Router, deps: DashboardDeps): void {
  router.get(
    adminPath,
    adminPage(deps, (ctx, v) => listPage(ctx, v)),
  );
  router.post(`${adminPath}/clients`, adminAction(deps, createClient));
  router.get(
    `${adminPath}/clients/:clientId`,
    adminPage(deps, (ctx, v) => clientPage(ctx, v)),
  );
  router.post(`${adminPath}/clients/:clientId`, adminAction(deps, updateClient));
  router.post(`${adminPath}/clients/:clientId/rotate-secret`, adminAction(deps, rotateSecret));
  router.post(`${adminPath}/clients/:clientId/disable`, adminAction(deps, setDisabled(true)));
  router.post(`${adminPath}/clients/:clientId/enable`, adminAction(deps, setDisabled(false)));
  router.post(`${adminPath}/clients/:clientId/delete`, adminAction(deps, deleteClient));
}
