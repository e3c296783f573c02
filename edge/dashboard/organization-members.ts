/** An organization's members page (the table, pending invitations, the add form) and its forms: add, change role, remove or leave. */
import type { Router } from "@koa/router";
import type { Context } from "koa";
import { Role, type Member, type Organization } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { action, confirmed, done, noticeOf, orgOf, page, render, type ActionHandler, type DashboardDeps, type Viewer } from "./context.ts";
import { formErrorsOrThrow } from "./core.ts";
import { canManage, roleName, when } from "./format.ts";
import { dangerForm, formAlert, postForm, selectField, textField } from "./forms.ts";
import { html, type Html } from "../html.ts";
import { roleBadge } from "./layout.ts";
import { invitationRoutes, invitationSentPage, invitationsSection, type InviteForm } from "./invitations.ts";
import { resendVerificationForm, unverifiedBadge } from "./account-email.ts";
import { orgPath } from "./paths.ts";

/** One member's row: the role (a select for owners, on others), the remove or leave button, and whether the address is verified. */
function memberRow(v: Viewer, org: Organization, m: Member): Html {
  const manage = canManage(org.role);
  const owner = org.role === Role.OWNER;
  const self = m.userId === v.user.id;
  const roleCell =
    owner && !self
      ? postForm(
          orgPath(org, `/members/${m.userId}/role`),
          v.formToken,
          html`<label class="sr-only" for="role-${m.userId}">Role of ${m.email}</label><select id="role-${m.userId}" name="role">${[
            Role.OWNER,
            Role.ADMIN,
            Role.MEMBER,
          ].map(
            (r) => html`<option value="${String(r)}"${r === m.role ? html` selected` : ""}>${roleName(r)}</option>`,
          )}</select> <button type="submit" class="btn small" aria-label="Save role of ${m.email}">Save</button>`,
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
  return html`<tr><td>${m.name}${self ? html` <span class="muted">(you)</span>` : ""}</td><td>${m.email}${verification}</td><td>${roleCell}</td><td>${when(m.createdAt)}</td><td class="row-actions">${remove}</td></tr>`;
}

/** The members table. */
function membersTable(v: Viewer, org: Organization, members: readonly Member[]): Html {
  return html`<div class="table-wrap" role="region" tabindex="0" aria-label="Members of ${org.name}"><table><caption class="sr-only">Members of ${org.name}</caption><thead><tr><th scope="col">Name</th><th scope="col">Email</th><th scope="col">Role</th><th scope="col">Joined</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead><tbody>${members.map((m) => memberRow(v, org, m))}</tbody></table></div>`;
}

/** "Add someone you work with", for owners and admins; only an owner may add an admin. `refused` is the form as it was sent. */
function addMemberForm(v: Viewer, org: Organization, refused?: InviteForm): Html {
  const { values, errors } = refused ?? {};
  const owner = org.role === Role.OWNER;
  return html`<h2 id="add-member-heading">Add someone you work with</h2>
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
)}`;
}

/** The members page; `refused` brings back the add or the invite form as it was sent, with its errors. */
async function membersPage(ctx: Context, v: Viewer, refused: { add?: InviteForm; invite?: InviteForm } = {}, status = 200): Promise<void> {
  const org = orgOf(v, ctx.params.slug);
  const manage = canManage(org.role);
  const [{ members }, { invitations }] = await Promise.all([
    v.core.organizations.listMembers({ organizationSlug: org.slug }),
    manage ? v.core.organizations.listInvitations({ organizationSlug: org.slug }) : { invitations: [] },
  ]);
  render(
    ctx,
    v,
    {
      title: "Members",
      org,
      section: "members",
      notice: noticeOf(ctx),
      lede: manage ? "Owners and admins see every server; members see the servers they are granted (on each server's page)." : "The people in this organization.",
      body: html`${membersTable(v, org, members)}
${manage ? invitationsSection(v, org, invitations, refused.invite) : ""}
${manage ? addMemberForm(v, org, refused.add) : ""}`,
    },
    status,
  );
}

const roleByName: Record<string, Role> = { admin: Role.ADMIN, member: Role.MEMBER };

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

/** The members page and its forms, and the invitations, which answer a refused invite on the members page. */
export function memberRoutes(router: Router, deps: DashboardDeps): void {
  router.get(
    "/app/o/:slug/members",
    page(deps, (ctx, v) => membersPage(ctx, v)),
  );
  router.post("/app/o/:slug/members", action(deps, addMember));
  router.post("/app/o/:slug/members/:userId/role", action(deps, changeMemberRole));
  router.post("/app/o/:slug/members/:userId/remove", action(deps, removeMember));
  invitationRoutes(router, deps, (ctx, v, invite, status) => membersPage(ctx, v, { invite }, status));
}
