/**
 * An organization's API keys on its overview page (owners and admins): the list with revoke
 * buttons, and the create form whose secret is shown once on the page that answers it.
 */
import type { Router } from "@koa/router";
import type { Organization } from "../../gen/outpost/organizations/v1/resources_pb.js";
import type { OrganizationApiKey } from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { action, confirmed, done, orgOf, render, PageError, type ActionHandler, type DashboardDeps, type Viewer } from "./context.ts";
import { allMessages, formErrorsOrThrow } from "./core.ts";
import { when } from "./format.ts";
import { apiKeyExpiry } from "./account.ts";
import { dangerForm, postForm, selectField, textField } from "./forms.ts";
import { secretBlock } from "./layout.ts";
import { html, type Html } from "../html.ts";
import { orgPath } from "./paths.ts";

const expiries = [
  { value: "90", label: "90 days" },
  { value: "30", label: "30 days" },
  { value: "7", label: "7 days" },
  { value: "365", label: "365 days" },
  { value: "none", label: "No expiry" },
];

export function organizationKeysSection(v: Viewer, org: Organization, keys: readonly OrganizationApiKey[]): Html {
  const rows = keys.map(
    ({ apiKey: k, creatorEmail }) =>
      html`<tr><td>${k!.name}</td><td class="mono">${k!.prefix}…</td><td>${creatorEmail}</td><td>${when(k!.createdAt)}</td><td>${when(k!.expiresAt, "Never")}</td><td>${when(k!.lastUsedAt, "Never")}</td><td class="row-actions">${dangerForm(
        {
          action: orgPath(org, `/api-keys/${k!.id}/revoke`),
          token: v.formToken,
          label: "Revoke",
          ariaLabel: `Revoke organization key ${k!.name}`,
          confirm: `Revoke the organization API key "${k!.name}"?`,
          consequence: "Scripts using it get 401 from the next request on. This cannot be undone.",
          buttonClass: "danger small",
        },
      )}</td></tr>`,
  );
  return html`<section class="panel stack" aria-labelledby="org-keys-heading">
<h2 id="org-keys-heading">Organization API keys</h2>
<p>An organization API key works in the HTTP API (header <span class="mono">X-API-Key</span>) for ${org.name} alone, with its creator's current role here. It stops working when its creator leaves the organization.</p>
${
  keys.length
    ? html`<div class="table-wrap" role="region" tabindex="0" aria-labelledby="org-keys-heading"><table><caption class="sr-only">API keys of ${org.name}</caption><thead><tr><th scope="col">Name</th><th scope="col">Prefix</th><th scope="col">Created by</th><th scope="col">Created</th><th scope="col">Expires</th><th scope="col">Last used</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead><tbody>${rows}</tbody></table></div>`
    : html`<p class="empty">No organization API keys.</p>`
}
${postForm(
  orgPath(org, "/api-keys"),
  v.formToken,
  html`${textField({ name: "name", id: "f-org-key-name", label: "Key name", required: true, maxlength: 64, hint: "What uses it, e.g. “CI deploy”." })}
${selectField({ name: "expiry", id: "f-org-key-expiry", label: "Expires", value: "90", options: expiries })}
<div class="actions"><button type="submit" class="btn">Create organization API key</button></div>`,
  html` class="stack"`,
)}
</section>`;
}

const createKey: ActionHandler = async (ctx, v, form) => {
  const org = orgOf(v, ctx.params.slug);
  const expiry = form.get("expiry") ?? "90";
  try {
    const res = await v.core.organizations.createOrganizationApiKey({
      organizationSlug: org.slug,
      name: (form.get("name") ?? "").trim(),
      expiry: apiKeyExpiry(expiry),
    });
    render(ctx, v, {
      title: `Organization API key "${res.apiKey!.name}" created`,
      org,
      section: "overview",
      lede: html`Send it as the X-API-Key header. It works for ${org.name} alone, with your role here.`,
      body: html`<section class="panel stack reveal" aria-labelledby="key-heading">
<h2 id="key-heading">The new key</h2>
${secretBlock("org-api-key", "API key", res.key, "It is shown only this once: Outpost keeps only a hash. If you lose it, revoke it and create another.")}
<div class="actions"><a class="btn primary" href="${orgPath(org)}">Done</a></div>
</section>`,
    });
  } catch (error) {
    throw new PageError(400, allMessages(formErrorsOrThrow(error)).join(" "));
  }
};

const revokeKey: ActionHandler = async (ctx, v, form) => {
  const org = orgOf(v, ctx.params.slug);
  if (
    !confirmed(ctx, v, form, {
      title: "Revoke this organization API key?",
      consequence: "Scripts using it get 401 from the next request on.",
      label: "Revoke",
      cancel: orgPath(org),
      org,
    })
  )
    return;
  await v.core.organizations.revokeOrganizationApiKey({ organizationSlug: org.slug, apiKeyId: ctx.params.keyId });
  done(ctx, orgPath(org), "org-key-revoked");
};

export function organizationKeyRoutes(router: Router, deps: DashboardDeps): void {
  router.post("/app/o/:slug/api-keys", action(deps, createKey));
  router.post("/app/o/:slug/api-keys/:keyId/revoke", action(deps, revokeKey));
}
