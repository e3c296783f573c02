/**
 * The integrations pages of an organization: the list (with each one's test, rotate, enable or
 * disable and delete buttons, and the last test's result), the form that adds one, and the page
 * that shows a webhook's signing secret once, and one integration's edit page. The forms they post
 * are handled in integrations.ts.
 */
import type { Context } from "koa";
import { IntegrationKind, type Integration, type TestIntegrationResponse } from "../../gen/outpost/integrations/v1/integrations_service_pb.js";
import type { Organization } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { managedOrgOf, oneOf, noticeOf, render, type Viewer } from "./context.ts";
import type { FormErrors } from "./core.ts";
import { when } from "./format.ts";
import { dangerForm, formAlert, postForm, selectField, textArea, textField } from "./forms.ts";
import { html, type Html } from "../html.ts";
import { secretBlock } from "./layout.ts";
import { orgPath } from "./paths.ts";

/** The add form's values as typed (kept when a form comes back refused). */
export interface IntegrationValues {
  name: string;
  kind: string;
  url: string;
  recipients: string;
}

const fields = ["name", "url", "recipients", "discord", "webhook", "email"];

export const kindNames: Record<number, string> = { [IntegrationKind.DISCORD]: "Discord", [IntegrationKind.WEBHOOK]: "Webhook", [IntegrationKind.EMAIL]: "Email" };

/** The organization of the URL, when the viewer may manage its integrations; else a 403 page. */
export function managedIntegrations(v: Viewer, slug: string): Organization {
  return managedOrgOf(v, slug, "manage its integrations");
}

function target(i: Integration): Html {
  return i.kind === IntegrationKind.EMAIL ? html`${i.recipients.join(", ")}` : html`<span class="mono">${i.url}</span>`;
}

/** One integration's buttons: edit, test, rotate (webhooks), enable or disable, delete. */
function actions(v: Viewer, org: Organization, i: Integration): Html {
  const base = orgPath(org, `/integrations/${i.id}`);
  return html`<div class="actions">
<a class="btn small" href="${base}/edit" aria-label="Edit ${i.name}">Edit</a>
${postForm(`${base}/test`, v.formToken, html`<button type="submit" class="btn small" aria-label="Send test to ${i.name}">Send test</button>`, html` class="inline"`)}
${i.kind === IntegrationKind.WEBHOOK ? dangerForm({ action: `${base}/rotate-secret`, token: v.formToken, label: "Rotate secret", ariaLabel: `Rotate secret of ${i.name}`, confirm: `Rotate the signing secret of ${i.name}?`, consequence: "Deliveries are signed with the new secret at once; the receiver needs it to verify them.", buttonClass: "danger-outline small" }) : ""}
${
  i.enabled
    ? postForm(`${base}/disable`, v.formToken, html`<button type="submit" class="btn small" aria-label="Disable ${i.name}">Disable</button>`, html` class="inline"`)
    : postForm(`${base}/enable`, v.formToken, html`<button type="submit" class="btn small" aria-label="Enable ${i.name}">Enable</button>`, html` class="inline"`)
}
${dangerForm({ action: `${base}/delete`, token: v.formToken, label: "Delete", ariaLabel: `Delete ${i.name}`, confirm: `Delete the integration ${i.name}?`, consequence: "Nothing more is sent to it. This cannot be undone.", buttonClass: "danger small" })}
</div>`;
}

function testResult(name: string, r: TestIntegrationResponse): Html {
  return html`<section class="panel stack" aria-labelledby="test-heading" role="status">
<h2 id="test-heading">Test of ${name}: ${r.ok ? "delivered" : "failed"}</h2>
<dl class="facts">
<div><dt>Result</dt><dd>${r.ok ? html`<span class="status online">Delivered</span>` : html`<span class="status offline">Failed</span>`}</dd></div>
${r.httpStatus ? html`<div><dt>HTTP status</dt><dd>${String(r.httpStatus)}</dd></div>` : ""}
${r.error ? html`<div><dt>Error</dt><dd>${r.error}</dd></div>` : ""}
<div><dt>Message id</dt><dd class="mono">${r.messageId}</dd></div>
<div><dt>Took</dt><dd>${String(r.durationMs)} ms</dd></div>
</dl>
</section>`;
}

function addForm(v: Viewer, org: Organization, values: IntegrationValues, errors?: FormErrors): Html {
  return postForm(
    orgPath(org, "/integrations"),
    v.formToken,
    html`${formAlert(errors, fields)}
${textField({ name: "name", label: "Name", value: values.name, required: true, maxlength: 80, hint: "For you, e.g. “#ops on Discord”.", errors })}
${selectField({
  name: "kind",
  label: "Kind",
  value: values.kind,
  options: [
    { value: "discord", label: "Discord channel" },
    { value: "webhook", label: "Webhook (signed JSON)" },
    { value: "email", label: "Email" },
  ],
  errors,
})}
${textField({ name: "url", label: "URL", type: "url", value: values.url, hint: "Discord: the channel's webhook URL. Webhook: your https endpoint. Not used for email.", errors })}
${textArea({ name: "recipients", label: "Email recipients", value: values.recipients, rows: 3, hint: "Email only: one address per line, up to 10, each the verified address of a member of this organization.", errors })}
<div class="actions"><button type="submit" class="btn primary">Add integration</button></div>`,
    html` class="panel stack" aria-labelledby="add-integration-heading"`,
  );
}

export async function integrationsPage(
  ctx: Context,
  v: Viewer,
  o: { values?: IntegrationValues; errors?: FormErrors; tested?: { name: string; result: TestIntegrationResponse } } = {},
  status = 200,
): Promise<void> {
  const org = managedIntegrations(v, ctx.params.slug);
  const { integrations } = await v.core.integrations.listIntegrations({ organizationSlug: org.slug });
  const rows = integrations.map(
    (i) =>
      html`<tr><th scope="row">${i.name}</th><td>${kindNames[i.kind] ?? "Unknown"}</td><td class="wrap">${target(i)}</td><td>${i.enabled ? html`<span class="status online">Enabled</span>` : html`<span class="status offline">Disabled</span>`}</td><td>${when(i.createdAt)}</td><td>${actions(v, org, i)}</td></tr>`,
  );
  render(
    ctx,
    v,
    {
      title: "Integrations",
      org,
      section: "integrations",
      notice: noticeOf(ctx),
      lede: "Where Outpost sends messages: Discord channels, your own endpoints (signed webhooks) and email.",
      body: html`${o.tested ? testResult(o.tested.name, o.tested.result) : ""}
${
  integrations.length
    ? html`<div class="table-wrap" role="region" tabindex="0" aria-label="Integrations of ${org.name}"><table><caption class="sr-only">Integrations of ${org.name}</caption><thead><tr><th scope="col">Name</th><th scope="col">Kind</th><th scope="col">Sends to</th><th scope="col">State</th><th scope="col">Added</th><th scope="col">Actions</th></tr></thead><tbody>${rows}</tbody></table></div>`
    : html`<p class="empty">No integrations yet.</p>`
}
<h2 id="add-integration-heading">Add an integration</h2>
${addForm(v, org, o.values ?? { name: "", kind: "discord", url: "", recipients: "" }, o.errors)}`,
    },
    status,
  );
}

/** The edit form's values: the name, and a new URL (empty: the current one stays) or the recipients. */
export interface IntegrationEdit {
  name: string;
  url: string;
  recipients: string;
}

/** One integration of the organization, or a 404 page. */
export async function integrationOf(v: Viewer, org: Organization, id: string): Promise<Integration> {
  const { integrations } = await v.core.integrations.listIntegrations({ organizationSlug: org.slug });
  return oneOf(integrations, id, "That integration does not exist.");
}

/**
 * Edit an integration: its name, and where it sends. A URL is never shown whole (it may carry a
 * token): a new one replaces it, an empty field keeps it. Its kind stays what it is.
 */
export async function editIntegrationPage(
  ctx: Context,
  v: Viewer,
  o: { values?: IntegrationEdit; errors?: FormErrors; integration?: Integration } = {},
  status = 200,
): Promise<void> {
  const org = managedIntegrations(v, ctx.params.slug);
  const i = o.integration ?? (await integrationOf(v, org, ctx.params.integrationId));
  const email = i.kind === IntegrationKind.EMAIL;
  const values = o.values ?? { name: i.name, url: "", recipients: i.recipients.join("\n") };
  render(
    ctx,
    v,
    {
      title: `Edit ${i.name}`,
      org,
      section: "integrations",
      crumbs: [{ href: orgPath(org, "/integrations"), label: "Integrations" }],
      lede: `${kindNames[i.kind] ?? "Integration"}: its kind cannot change; add another integration for another kind.`,
      body: postForm(
        orgPath(org, `/integrations/${i.id}`),
        v.formToken,
        html`${formAlert(o.errors, fields)}
${textField({ name: "name", label: "Name", value: values.name, required: true, maxlength: 80, errors: o.errors })}
${
  email
    ? textArea({
        name: "recipients",
        label: "Email recipients",
        value: values.recipients,
        rows: 3,
        hint: "One address per line, up to 10, each the verified address of a member of this organization.",
        errors: o.errors,
      })
    : textField({
        name: "url",
        label: "New URL",
        type: "url",
        value: values.url,
        hint: `Now: ${i.url} (shortened: it may hold a secret). Leave empty to keep it.`,
        errors: o.errors,
      })
}
<div class="actions"><button type="submit" class="btn primary">Save integration</button> <a class="btn" href="${orgPath(org, "/integrations")}">Cancel</a></div>`,
        html` class="panel stack" aria-label="Edit ${i.name}"`,
      ),
    },
    status,
  );
}

/** A webhook's signing secret, shown this once (after creation or rotation). */
export function integrationSecretPage(ctx: Context, v: Viewer, org: Organization, i: Integration, secret: string, created: boolean): void {
  render(ctx, v, {
    title: created ? `Webhook "${i.name}" added` : `New secret for "${i.name}"`,
    org,
    section: "integrations",
    crumbs: [{ href: orgPath(org, "/integrations"), label: "Integrations" }],
    lede: created
      ? "Your endpoint checks each delivery's signature with this secret (docs/alerts.md shows how)."
      : "Deliveries are now signed with this secret; the previous one no longer verifies.",
    body: html`<section class="panel stack reveal" aria-labelledby="secret-heading">
<h2 id="secret-heading">Signing secret</h2>
${secretBlock("signing-secret", "Signing secret", secret, "It is shown only this once. If you lose it, rotate it on the integrations page.")}
<div class="actions"><a class="btn primary" href="${orgPath(org, "/integrations")}">Back to integrations</a></div>
</section>`,
  });
}
