/**
 * An organization's members, part of OrganizationsService: managers add and remove members,
 * owners change roles, anyone may leave. Every change of roles or members locks the organization's
 * row, so two owners cannot demote or remove each other at once and leave none.
 *
 * Adding by email adds at once only a verified colleague of the caller (member-queries.ts); anyone
 * else gets an invitation, whether or not the address has an account, so the answer tells no one
 * which addresses have accounts, and an account signed up with a stranger's address is never made
 * a member by someone who meant that stranger.
 */
import { orgLink } from "./links.ts";
import type { ServiceImpl } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import { LockMode } from "@mikro-orm/core";
import type { EntityManager } from "@mikro-orm/postgresql";
import {
  AddMemberResponseSchema,
  ListMembersResponseSchema,
  OrganizationsService,
  RemoveMemberResponseSchema,
  UpdateMemberRoleResponseSchema,
} from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { AccessGrant, Membership, Organization, User } from "../db/entities.ts";
import { AccessRequest } from "../db/access-request-entities.ts";
import { entityManager, requireUser, type UserCaller } from "../context.ts";
import { fail } from "../errors.ts";
import { holdManager, requireManager, requireMember, requireOwner, type OrganizationAccess } from "../access.ts";
import { memberToProto } from "../convert.ts";
import { roleFromProto, type Role } from "../roles.ts";
import type { Member } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { normalizeEmail } from "../identity/normalize-email.ts";
import { recordInOrganization } from "./organization-activity.ts";
import { revokeMemberKeys } from "./organization-api-keys.ts";
import { revokeInvitationsOfInviter, sendInvitation } from "./invitation-methods.ts";
import { findVerifiedColleague } from "./member-queries.ts";
import type { CoreDeps } from "../deps.ts";
import { keepNotification, type Kept, type NotificationDraft } from "../notifications/notify.ts";

type Impl = ServiceImpl<typeof OrganizationsService>;
type MemberMethods = Pick<Impl, "addMember" | "listMembers" | "updateMemberRole" | "removeMember">;
type MemberDeps = Pick<CoreDeps, "clock" | "notifier" | "statements" | "config" | "rateLimits" | "mailer" | "logger">;

/**
 * Within the change's transaction: tells the member whose membership someone else changed (a
 * `membership` notification), unless they made the change themself.
 */
async function tellMember(deps: MemberDeps, tx: EntityManager, callerId: string, draft: NotificationDraft): Promise<Kept | undefined> {
  if (draft.userId === callerId) return undefined;
  return keepNotification(deps.statements.on(tx), draft, deps.clock.now());
}

/** Within a transaction: the membership to change, with the organization's row locked. */
async function lockedMembership(tx: EntityManager, access: OrganizationAccess, userId: string): Promise<Membership> {
  await tx.findOneOrFail(Organization, { id: access.organization.id }, { lockMode: LockMode.PESSIMISTIC_WRITE });
  const membership = await tx.findOne(Membership, { organization: access.organization.id, user: userId }, { populate: ["user"], refresh: true });
  if (!membership) throw fail("not_found", "member not found");
  return membership;
}

async function ensureAnotherOwner(tx: EntityManager, membership: Membership): Promise<void> {
  if (membership.role !== "owner") return;
  const owners = await tx.count(Membership, { organization: membership.organization.id, role: "owner" });
  if (owners <= 1) throw fail("last_owner", "an organization needs an owner: make someone else an owner first");
}

/**
 * Adds the verified colleague with this email at once, in a transaction holding the organization
 * (so a caller removed meanwhile adds no one): the new member, or undefined when the address is not
 * a verified colleague's (the caller then invites it). A member of the organization already is
 * already_member, whoever they are: the caller sees its members.
 */
async function addColleague(
  deps: MemberDeps,
  em: EntityManager,
  caller: UserCaller,
  req: { organizationSlug: string; email: string; role: Role },
): Promise<{ member: Member; kept: Kept | undefined } | undefined> {
  const { role } = req;
  const email = normalizeEmail(req.email);
  return em.transactional(async (tx) => {
    const access = await holdManager(tx, caller, req.organizationSlug);
    if (role === "admin" && access.role !== "owner") throw fail("permission_denied", "only an owner can add an admin");
    if (await tx.count(Membership, { organization: access.organization.id, user: { email } })) {
      throw fail("already_member", `${email} is already a member`);
    }
    const colleague = await findVerifiedColleague(deps.statements.on(tx), caller.user.id, email);
    if (!colleague) return undefined;
    const user = await tx.findOneOrFail(User, { id: colleague });
    const membership = tx.create(Membership, { organization: access.organization, user, role });
    recordInOrganization(tx, caller, access, { action: "member.added", targetType: "user", targetId: user.id, details: { email: user.email, role } });
    const kept = await tellMember(deps, tx, caller.user.id, {
      userId: user.id,
      kind: "membership",
      title: `You were added to ${access.organization.name}`,
      body: `${caller.user.email} added you as ${role === "member" ? "a member" : `an ${role}`}.`,
      link: orgLink(access.organization.slug),
      organizationId: access.organization.id,
    });
    await tx.flush();
    return { member: memberToProto(membership), kept };
  });
}

const addMember =
  (deps: MemberDeps): Impl["addMember"] =>
  async (req, ctx) => {
    const caller = requireUser(ctx);
    const request = { organizationSlug: req.organizationSlug, email: req.email, role: roleFromProto(req.role) };
    const added = await addColleague(deps, entityManager(ctx), caller, request);
    if (added) {
      deps.notifier.announce([added.kept]);
      return create(AddMemberResponseSchema, { member: added.member });
    }
    return create(AddMemberResponseSchema, await sendInvitation(deps, entityManager(ctx), caller, request));
  };

const listMembers: Impl["listMembers"] = async (req, ctx) => {
  const em = entityManager(ctx);
  const access = await requireMember(em, requireUser(ctx), req.organizationSlug);
  const memberships = await em.find(Membership, { organization: access.organization.id }, { populate: ["user"], orderBy: { createdAt: "asc", id: "asc" } });
  return create(ListMembersResponseSchema, { members: memberships.map(memberToProto) });
};

const updateMemberRole =
  (deps: MemberDeps): Impl["updateMemberRole"] =>
  async (req, ctx) => {
    const caller = requireUser(ctx);
    const role = roleFromProto(req.role);
    let kept: Kept | undefined;
    const response = await entityManager(ctx).transactional(async (tx) => {
      const access = await requireOwner(tx, caller, req.organizationSlug);
      const membership = await lockedMembership(tx, access, req.userId);
      const previous = membership.role as Role;
      if (previous !== role) {
        if (role !== "owner") await ensureAnotherOwner(tx, membership);
        membership.role = role;
        await revokeInvitationsOfInviter(tx, caller, access, { userId: req.userId, role });
        recordInOrganization(tx, caller, access, {
          action: "member.role_changed",
          targetType: "user",
          targetId: req.userId,
          details: { email: membership.user.email, from: previous, to: role },
        });
        kept = await tellMember(deps, tx, caller.user.id, {
          userId: req.userId,
          kind: "membership",
          title: `Your role in ${access.organization.name} is now ${role}`,
          body: `${caller.user.email} changed it from ${previous}.`,
          link: orgLink(access.organization.slug),
          organizationId: access.organization.id,
        });
      }
      return create(UpdateMemberRoleResponseSchema, { member: memberToProto(membership) });
    });
    deps.notifier.announce([kept]);
    return response;
  };

const removeMember =
  (deps: MemberDeps): Impl["removeMember"] =>
  async (req, ctx) => {
    const caller = requireUser(ctx);
    const leaving = req.userId === caller.user.id;
    let kept: Kept | undefined;
    await entityManager(ctx).transactional(async (tx) => {
      const access = leaving ? await requireMember(tx, caller, req.organizationSlug) : await requireManager(tx, caller, req.organizationSlug);
      const membership = await lockedMembership(tx, access, req.userId);
      if (!leaving && membership.role !== "member" && access.role !== "owner") {
        throw fail("permission_denied", "only an owner can remove an owner or admin");
      }
      await ensureAnotherOwner(tx, membership);
      await tx.nativeDelete(AccessGrant, { organization: access.organization.id, user: req.userId });
      // Their pending requests end with their membership: re-added, they start afresh.
      await tx.nativeUpdate(
        AccessRequest,
        { organization: access.organization.id, user: req.userId, status: "pending" },
        { status: "cancelled", decidedAt: deps.clock.now(), decidedByUserId: caller.user.id, decidedByEmail: caller.user.email },
      );
      await revokeMemberKeys(tx, caller, access, req.userId, deps.clock.now());
      await revokeInvitationsOfInviter(tx, caller, access, { userId: req.userId, role: null });
      tx.remove(membership);
      recordInOrganization(tx, caller, access, {
        action: leaving ? "member.left" : "member.removed",
        targetType: "user",
        targetId: req.userId,
        details: { email: membership.user.email, role: membership.role },
      });
      // Not linked to the organization: they no longer see it.
      kept = await tellMember(deps, tx, caller.user.id, {
        userId: req.userId,
        kind: "membership",
        title: `You were removed from ${access.organization.name}`,
        body: `${caller.user.email} removed you; its servers and clients are no longer yours to see.`,
      });
    });
    deps.notifier.announce([kept]);
    return create(RemoveMemberResponseSchema, {});
  };

export function memberMethods(deps: MemberDeps): MemberMethods {
  return { addMember: addMember(deps), listMembers, updateMemberRole: updateMemberRole(deps), removeMember: removeMember(deps) };
}
