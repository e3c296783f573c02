/** Organizations: the list and creation, switching, and the overview (plan and usage); members are in organization-members.ts. */
import type { Router } from "@koa/router";
import type { Context } from "koa";
import { Role } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { action, confirmed, done, noticeOf, orgOf, page, PageError, render, type ActionHandler, type DashboardDeps, type PageHandler, type Viewer } from "./context.ts";
import { allMessages, formErrorsOrThrow, type FormErrors } from "./core.ts";
import { canManage, roleName, suggestSlug, when } from "./format.ts";
import { dangerForm, formAlert, postForm, textField } from "./forms.ts";
import { html, type Html } from "../html.ts";
import { chartAssets, roleBadge } from "./layout.ts";
import { organizationPlayersPanel } from "./server-charts.ts";
import { memberRoutes } from "./organization-members.ts";
import { organizationKeyRoutes, organizationKeysSection } from "./organization-keys.ts";
import { orgPath } from "./paths.ts";

function createForm(v: Viewer, values: { name?: string; slug?: string } = {}, errors?: FormErrors): Html {
  return postForm(
    "/app/organizations",
    v.formToken,
    html`${formAlert(errors, ["name", "slug"])}
${textField({ name: "name", label: "Name", value: values.name, required: true, maxlength: 80, errors, data: { "slug-source": "f-slug" } })}
${textField({ name: "slug", label: "URL name (slug)", value: values.slug, hint: "Lower-case letters, digits and hyphens, 3 to 40 characters. Suggested from the name; leave empty to use the suggestion.", maxlength: 40, errors })}
<div class="actions"><button type="submit" class="btn primary">Create organization</button></div>`,
    html` class="panel stack" aria-labelledby="create-org-heading"`,
  );
}

function listPage(ctx: Context, v: Viewer, values?: { name?: string; slug?: string }, errors?: FormErrors, status = 200): void {
  const rows = v.organizations.map(
    (o) => html`<tr><td><a href="${orgPath(o)}">${o.name}</a></td><td class="mono">${o.slug}</td><td>${roleBadge(o.role)}</td><td>${o.plan}</td></tr>`,
  );
  render(
    ctx,
    v,
    {
      title: "Organizations",
      area: "organizations",
      notice: noticeOf(ctx),
      lede: v.organizations.length
        ? "The organizations you belong to. Open one to manage its servers."
        : "You are not in an organization yet. Create one to add game servers.",
      body: html`${
        v.organizations.length
          ? html`<div class="table-wrap" role="region" tabindex="0" aria-label="Your organizations"><table><caption class="sr-only">Your organizations</caption><thead><tr><th scope="col">Name</th><th scope="col">Slug</th><th scope="col">Your role</th><th scope="col">Plan</th></tr></thead><tbody>${rows}</tbody></table></div>`
          : ""
      }
<h2 id="create-org-heading">Create an organization</h2>
${createForm(v, values, errors)}`,
    },
    status,
  );
}

async function overview(ctx: Context, v: Viewer): Promise<void> {
  const org = orgOf(v, ctx.params.slug);
  const manage = canManage(org.role);
  const [{ usage }, { apiKeys }, players] = await Promise.all([
    v.core.organizations.getOrganization({ organizationSlug: org.slug }),
    manage ? v.core.organizations.listOrganizationApiKeys({ organizationSlug: org.slug }) : { apiKeys: [] },
    organizationPlayersPanel(v, org),
  ]);
  const meter = (label: string, used: number, limit: number, href: string | undefined) =>
    html`<div class="usage">
<p class="usage-label">${href ? html`<a href="${href}">${label}</a>` : label} <strong>${used}/${limit}</strong></p>
<progress max="${Math.max(1, limit)}" value="${Math.min(used, Math.max(1, limit))}" aria-hidden="true"></progress>
</div>`;
  render(ctx, v, {
    title: org.name,
    org,
    section: "overview",
    notice: noticeOf(ctx),
    ...chartAssets,
    lede: html`Slug <span class="mono">${org.slug}</span> · your role: ${roleName(org.role)} · created ${when(org.createdAt)}`,
    body: html`<section class="panel" aria-labelledby="plan-heading">
<h2 id="plan-heading">Plan: ${org.plan}</h2>
${meter("Servers", usage?.servers ?? 0, usage?.serverLimit ?? 0, orgPath(org, "/servers"))}
${meter("Game OAuth clients", usage?.gameOauthClients ?? 0, usage?.gameOauthClientLimit ?? 0, manage ? orgPath(org, "/clients") : undefined)}
${meter("Knowledge notes", usage?.notes ?? 0, usage?.noteLimit ?? 0, orgPath(org, "/knowledge"))}
<p class="hint">A platform admin changes an organization's plan.</p>
</section>
${players}
${
  manage
    ? html`<section class="panel stack" aria-labelledby="settings-heading">
<h2 id="settings-heading">Settings</h2>
${postForm(
  orgPath(org, "/rename"),
  v.formToken,
  html`${textField({ name: "name", label: "Organization name", value: org.name, required: true, maxlength: 80, id: "f-org-name" })}
<div class="actions"><button type="submit" class="btn">Rename</button></div>`,
  html` class="stack"`,
)}
</section>
${organizationKeysSection(v, org, apiKeys)}`
    : ""
}
${
  org.role === Role.OWNER
    ? html`<section class="panel danger-zone" aria-labelledby="danger-heading">
<h2 id="danger-heading">Delete organization</h2>
<p>Deleting ${org.name} deletes its servers, grants and Game OAuth clients. This cannot be undone.</p>
${dangerForm({ action: orgPath(org, "/delete"), token: v.formToken, label: "Delete organization", confirm: `Delete the organization "${org.name}"?`, consequence: "Its servers, grants and Game OAuth clients are deleted too. This cannot be undone." })}
</section>`
    : ""
}`,
  });
}

const createOrganization: ActionHandler = async (ctx, v, form) => {
  const name = (form.get("name") ?? "").trim();
  const slug = (form.get("slug") ?? "").trim() || suggestSlug(name);
  try {
    const { organization } = await v.core.organizations.createOrganization({ name, slug });
    done(ctx, orgPath(organization!), "org-created");
  } catch (error) {
    listPage(ctx, v, { name, slug }, formErrorsOrThrow(error, { slug_taken: "slug" }), 400);
  }
};

const switchOrganization: PageHandler = (ctx, v) => {
  const slug = typeof ctx.query.org === "string" ? ctx.query.org : "";
  const org = v.organizations.find((o) => o.slug === slug);
  ctx.redirect(org ? orgPath(org) : "/app/organizations");
};

const renameOrganization: ActionHandler = async (ctx, v, form) => {
  const org = orgOf(v, ctx.params.slug);
  try {
    await v.core.organizations.updateOrganization({ organizationSlug: org.slug, name: (form.get("name") ?? "").trim() });
    done(ctx, orgPath(org), "org-renamed");
  } catch (error) {
    throw new PageError(400, allMessages(formErrorsOrThrow(error)).join(" "));
  }
};

const deleteOrganization: ActionHandler = async (ctx, v, form) => {
  const org = orgOf(v, ctx.params.slug);
  if (
    !confirmed(ctx, v, form, {
      title: `Delete the organization "${org.name}"?`,
      consequence: "Its servers, grants and Game OAuth clients are deleted too. This cannot be undone.",
      label: "Delete organization",
      cancel: orgPath(org),
      org,
    })
  )
    return;
  await v.core.organizations.deleteOrganization({ organizationSlug: org.slug });
  done(ctx, "/app/organizations", "org-deleted");
};

export function organizationRoutes(router: Router, deps: DashboardDeps): void {
  router.get(
    "/app/organizations",
    page(deps, (ctx, v) => listPage(ctx, v)),
  );
  router.post("/app/organizations", action(deps, createOrganization));
  router.get("/app/switch", page(deps, switchOrganization));
  router.get("/app/o/:slug", page(deps, overview));
  router.post("/app/o/:slug/rename", action(deps, renameOrganization));
  router.post("/app/o/:slug/delete", action(deps, deleteOrganization));
  memberRoutes(router, deps);
  organizationKeyRoutes(router, deps);
}
