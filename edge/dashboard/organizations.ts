/** Organizations: the list and creation, switching, the overview (plan and usage) and members. */
import type { Router } from "@koa/router";
import type { Context } from "koa";
import { Role } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { action, confirmed, done, noticeOf, orgOf, page, PageError, render, type ActionHandler, type DashboardDeps, type PageHandler, type Viewer } from "./context.ts";
import { allMessages, formErrorsOrThrow, type FormErrors } from "./core.ts";
import { canManage, roleName, suggestSlug, when } from "./format.ts";
import { dangerForm, formAlert, postForm, selectField, textField } from "./forms.ts";
import { html, type Html } from "../html.ts";
import { roleBadge } from "./layout.ts";
import { invitationRoutes, invitationSentPage, invitationsSection, type InviteForm } from "./invitations.ts";
import { resendVerificationForm, unverifiedBadge } from "./account-email.ts";
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
    (o) =>
      html`<tr>
        <td><a href="${orgPath(o)}">${o.name}</a></td>
        <td class="mono">${o.slug}</td>
        <td>${roleBadge(o.role)}</td>
        <td>${o.plan}</td>
      </tr>`,
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
            ? html`<div class="table-wrap" role="region" tabindex="0" aria-label="Your organizations">
                <table>
                  <caption class="sr-only">
                    Your organizations
                  </caption>
                  <thead>
                    <tr>
                      <th scope="col">Name</th>
                      <th scope="col">Slug</th>
                      <th scope="col">Your role</th>
                      <th scope="col">Plan</th>
                    </tr>
                  </thead>
                  <tbody>
                    ${rows}
                  </tbody>
                </table>
              </div>`
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
  const [{ usage }, { apiKeys }] = await Promise.all([
    v.core.organizations.getOrganization({ organizationSlug: org.slug }),
    manage ? v.core.organizations.listOrganizationApiKeys({ organizationSlug: org.slug }) : { apiKeys: [] },
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
    lede: html`Slug <span class="mono">${org.slug}</span> · your role: ${roleName(org.role)} · created ${when(org.createdAt)}`,
    body: html`<section class="panel" aria-labelledby="plan-heading">
        <h2 id="plan-heading">Plan: ${org.plan}</h2>
        ${meter("Servers", usage?.servers ?? 0, usage?.serverLimit ?? 0, orgPath(org, "/servers"))}
        ${meter("Game OAuth clients", usage?.gameOauthClients ?? 0, usage?.gameOauthClientLimit ?? 0, manage ? orgPath(org, "/clients") : undefined)}
        ${meter("Knowledge notes", usage?.notes ?? 0, usage?.noteLimit ?? 0, orgPath(org, "/knowledge"))}
        <p class="hint">A platform admin changes an organization's plan.</p>
      </section>
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

/** The members page; `refused` brings back the add or the invite form as it was sent, with its errors. */
async function membersPage(ctx: Context, v: Viewer, refused: { add?: InviteForm; invite?: InviteForm } = {}, status = 200): Promise<void> {
  const { invite } = refused;
  const { values, errors } = refused.add ?? {};
  const org = orgOf(v, ctx.params.slug);
  const manage = canManage(org.role);
  const [{ members }, { invitations }] = await Promise.all([
    v.core.organizations.listMembers({ organizationSlug: org.slug }),
    manage ? v.core.organizations.listInvitations({ organizationSlug: org.slug }) : { invitations: [] },
  ]);
  const owner = org.role === Role.OWNER;
  const rows = members.map((m) => {
    const self = m.userId === v.user.id;
    const roleCell =
      owner && !self
        ? postForm(
            orgPath(org, `/members/${m.userId}/role`),
            v.formToken,
            html`<label class="sr-only" for="role-${m.userId}">Role of ${m.email}</label
              ><select id="role-${m.userId}" name="role">
                ${[Role.OWNER, Role.ADMIN, Role.MEMBER].map((r) => html`<option value="${String(r)}" ${r === m.role ? html` selected` : ""}>${roleName(r)}</option>`)}
              </select>
              <button type="submit" class="btn small" aria-label="Save role of ${m.email}">Save</button>`,
            html` class="inline role-form"`,
          )
        : roleBadge(m.role);
    const canRemove = self || (manage && (owner || m.role === Role.MEMBER));
    const remove = canRemove
      ? dangerForm({
          action: orgPath(org, `/members/${m.userId}/remove`),
          token: v.formToken,
          label: self ? "Leave" : "Remove",
          ariaLabel: self ? `Leave ${org.name}` : `Remove ${m.email}`,
          confirm: self ? `Leave ${org.name}?` : `Remove ${m.email} from ${org.name}?`,
          consequence: self ? "You lose access to its servers at once." : "They lose access to its servers at once, and their server grants are removed.",
          buttonClass: "danger small",
        })
      : "";
    const verification = m.emailVerified
      ? ""
      : self
        ? html` ${unverifiedBadge} ${resendVerificationForm(v.formToken, orgPath(org, "/members"), "Verify")}`
        : html` ${unverifiedBadge}`;
    return html`<tr>
      <td>${m.name}${self ? html` <span class="muted">(you)</span>` : ""}</td>
      <td>${m.email}${verification}</td>
      <td>${roleCell}</td>
      <td>${when(m.createdAt)}</td>
      <td class="row-actions">${remove}</td>
    </tr>`;
  });
  render(
    ctx,
    v,
    {
      title: "Members",
      org,
      section: "members",
      notice: noticeOf(ctx),
      lede: manage ? "Owners and admins see every server; members see the servers they are granted (on each server's page)." : "The people in this organization.",
      body: html`<div class="table-wrap" role="region" tabindex="0" aria-label="Members of ${org.name}">
          <table>
            <caption class="sr-only">
              Members of ${org.name}
            </caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Email</th>
                <th scope="col">Role</th>
                <th scope="col">Joined</th>
                <th scope="col"><span class="sr-only">Actions</span></th>
              </tr>
            </thead>
            <tbody>
              ${rows}
            </tbody>
          </table>
        </div>
        ${manage ? invitationsSection(v, org, invitations, invite) : ""}
        ${
          manage
            ? html`<h2 id="add-member-heading">Add someone you work with</h2>
                ${postForm(
                  orgPath(org, "/members"),
                  v.formToken,
                  html`${formAlert(errors, ["email", "role"])}
                    ${textField({ name: "email", label: "Email", type: "email", value: values?.email, required: true, autocomplete: "off", hint: "Someone already in one of your organizations, with a verified address, joins at once. Anyone else is sent an invitation, as above.", errors })}
                    ${selectField({
                      name: "role",
                      label: "Role",
                      value: values?.role ?? "member",
                      options: [{ value: "member", label: "Member — sees granted servers" }, ...(owner ? [{ value: "admin", label: "Admin — manages everything" }] : [])],
                      errors,
                    })}
                    <div class="actions"><button type="submit" class="btn primary">Add member</button></div>`,
                  html` class="panel stack" aria-labelledby="add-member-heading"`,
                )}`
            : ""
        }`,
    },
    status,
  );
}

const roleByName: Record<string, Role> = { admin: Role.ADMIN, member: Role.MEMBER };

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

const addMember: ActionHandler = async (ctx, v, form) => {
  const org = orgOf(v, ctx.params.slug);
  const email = (form.get("email") ?? "").trim();
  const role = form.get("role") ?? "member";
  try {
    const res = await v.core.organizations.addMember({ organizationSlug: org.slug, email, role: roleByName[role] ?? Role.UNSPECIFIED });
    if (res.member) return done(ctx, orgPath(org, "/members"), "member-added");
    invitationSentPage(ctx, v, org, res);
  } catch (error) {
    await membersPage(ctx, v, { add: { values: { email, role }, errors: formErrorsOrThrow(error, { already_member: "email", invitation_pending: "email" }) } }, 400);
  }
};

const changeMemberRole: ActionHandler = async (ctx, v, form) => {
  const org = orgOf(v, ctx.params.slug);
  const role = Number(form.get("role")) as Role;
  await v.core.organizations.updateMemberRole({ organizationSlug: org.slug, userId: ctx.params.userId, role });
  done(ctx, orgPath(org, "/members"), "member-updated");
};

const removeMember: ActionHandler = async (ctx, v, form) => {
  const org = orgOf(v, ctx.params.slug);
  const self = ctx.params.userId === v.user.id;
  if (
    !confirmed(ctx, v, form, {
      title: self ? `Leave ${org.name}?` : "Remove this member?",
      consequence: self ? "You lose access to its servers at once." : "They lose access to the organization's servers at once.",
      label: self ? "Leave" : "Remove",
      cancel: orgPath(org, "/members"),
      org,
    })
  )
    return;
  await v.core.organizations.removeMember({ organizationSlug: org.slug, userId: ctx.params.userId });
  if (self) done(ctx, "/app/organizations", "left");
  else done(ctx, orgPath(org, "/members"), "member-removed");
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
  router.get(
    "/app/o/:slug/members",
    page(deps, (ctx, v) => membersPage(ctx, v)),
  );
  router.post("/app/o/:slug/members", action(deps, addMember));
  router.post("/app/o/:slug/members/:userId/role", action(deps, changeMemberRole));
  router.post("/app/o/:slug/members/:userId/remove", action(deps, removeMember));
  invitationRoutes(router, deps, (ctx, v, invite, status) => membersPage(ctx, v, { invite }, status));
  organizationKeyRoutes(router, deps);
}
