/**
 * Invitations by email, part of OrganizationsService: managers invite an address (which need not
 * have an account yet), list and revoke; the person with that address accepts through the link.
 * The link's secret is shown once and stored hashed; accepting uses it once (markAccepted) in the
 * transaction that adds the membership, so both happen or neither.
 */
import { randomUUID } from "node:crypto";
import type { ServiceImpl } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import {
  AcceptInvitationResponseSchema,
  GetInvitationResponseSchema,
  InviteMemberResponseSchema,
  ListInvitationsResponseSchema,
  OrganizationsService,
  RevokeInvitationResponseSchema,
} from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { InvitationSchema, InvitationStatus, type Invitation } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { hashSecret, issueSecret, looksLike } from "../../contract/secrets.ts";
import { visibleLine } from "../../contract/one-line.ts";
import { Membership, Organization, User } from "../db/entities.ts";
import type { EntityManager } from "@mikro-orm/postgresql";
import { entityManager, requireUser, type UserCaller } from "../context.ts";
import { inTransaction, type SqlRunner } from "../db/sql.ts";
import type { CoreDeps } from "../deps.ts";
import { fail } from "../errors.ts";
import { holdManager, requireManager, type OrganizationAccess } from "../access.ts";
import { memberToProto, organizationToProto } from "../convert.ts";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { roleFromProto, roleToProto, type Role } from "../roles.ts";
import { normalizeEmail } from "../identity/normalize-email.ts";
import { recordActivity } from "../activity/record.ts";
import { recordInOrganization } from "./organization-activity.ts";
import { rateLimited, inMinutes } from "../ratelimit/rate-limited.ts";
import { publicUrl } from "../public-url.ts";
import {
  findInvitationById,
  findInvitationByToken,
  hasPendingInvitation,
  insertInvitation,
  listInvitationRows,
  markAccepted,
  markRevoked,
  revokeInvitationsSentBy,
  type InvitationRow,
} from "./invitation-queries.ts";

type Impl = ServiceImpl<typeof OrganizationsService>;
type InvitationDeps = Pick<CoreDeps, "config" | "statements" | "rateLimits" | "mailer" | "logger">;

const statuses: Record<InvitationRow["status"], InvitationStatus> = {
  pending: InvitationStatus.PENDING,
  accepted: InvitationStatus.ACCEPTED,
  revoked: InvitationStatus.REVOKED,
  expired: InvitationStatus.EXPIRED,
};

function invitationToProto(row: InvitationRow): Invitation {
  return create(InvitationSchema, {
    id: row.id,
    email: row.email,
    role: roleToProto(row.role),
    status: statuses[row.status],
    inviterUserId: row.inviter_user_id ?? "",
    inviterEmail: row.inviter_email ?? "",
    createdAt: timestampFromDate(row.created_at),
    expiresAt: timestampFromDate(row.expires_at),
    acceptedAt: row.accepted_at ? timestampFromDate(row.accepted_at) : undefined,
    revokedAt: row.revoked_at ? timestampFromDate(row.revoked_at) : undefined,
  });
}

/** Where the link takes its holder: the dashboard's accept page on ACCOUNT_BASE_URL. */
function invitationLink(deps: InvitationDeps, token: string): string {
  return publicUrl(deps.config, `/app/invitations/accept?token=${token}`);
}

/** The invitation of a link; an unknown or malformed one is `not_found`. */
async function invitationOf(query: SqlRunner, token: string): Promise<InvitationRow> {
  const row = looksLike("invitation", token) ? await findInvitationByToken(query, hashSecret(token)) : undefined;
  if (!row) throw fail("not_found", "this invitation link is not valid: check that it was copied whole");
  return row;
}

/** Accepting with an address not verified yet: what to do about it. */
const unverified = (email: string) =>
  fail(
    "email_unverified",
    `confirm your address ${email} first: open the link Outpost mailed to it, or send a new one from Account → Security (an Outpost without SMTP has its operator run "outpost user verify-email ${email}")`,
  );

const closedReasons: Record<Exclude<InvitationRow["status"], "pending">, string> = {
  accepted: "this invitation has already been used",
  revoked: "this invitation was revoked; ask for a new one",
  expired: "this invitation has expired; ask for a new one",
};

/** An invitation made, as InviteMember answers it (and AddMember, for anyone it does not add at once). */
export interface SentInvitation {
  invitation: Invitation;
  token: string;
  link: string;
  emailSent: boolean;
  emailError: string;
}

/**
 * Invites `email` to the organization as `role`, and mails the link when SMTP is configured: the
 * caller must manage it (only an owner invites an admin), within the invitation rate limit; an
 * address that is a member already, or has a pending invitation, is refused. Nothing in the answer
 * or the refusals depends on whether the address has an account.
 */
export async function sendInvitation(
  deps: InvitationDeps,
  em: EntityManager,
  caller: UserCaller,
  req: { organizationSlug: string; email: string; role: Role },
): Promise<SentInvitation> {
  const { role } = req;
  const email = normalizeEmail(req.email);
  const secret = issueSecret("invitation");
  const { row, organizationName } = await em.transactional(async (tx) => {
    // Invitations of one organization are made one after another (FOR UPDATE), so one address gets
    // one pending invitation; and an inviter whose removal commits meanwhile invites no one.
    const access = await holdManager(tx, caller, req.organizationSlug, "update");
    if (role === "admin" && access.role !== "owner") throw fail("permission_denied", "only an owner can invite an admin");
    const decision = await deps.rateLimits.invitations.consume(`user:${caller.user.id}`);
    if (!decision.allowed) {
      throw rateLimited(deps.rateLimits.invitations.policy, decision.retryAfterSeconds, `too many invitations; try again in ${inMinutes(decision.retryAfterSeconds)}`);
    }
    if (await tx.count(Membership, { organization: access.organization.id, user: { email } })) {
      throw fail("failed_precondition", `${email} is already a member`);
    }
    const query = deps.statements.on(tx);
    if (await hasPendingInvitation(query, access.organization.id, email)) {
      throw fail("invitation_pending", `${email} already has a pending invitation; revoke it first to send a new one`);
    }
    const id = randomUUID();
    await insertInvitation(query, { id, organizationId: access.organization.id, email, role, tokenHash: secret.hash, invitedBy: caller.user.id });
    recordInOrganization(tx, caller, access, { action: "invitation.created", targetType: "invitation", targetId: id, details: { email, role } });
    return { row: (await findInvitationById(query, id))!, organizationName: access.organization.name };
  });
  const link = invitationLink(deps, secret.value);
  let emailError = "";
  if (deps.mailer.configured) {
    // Names others chose, each kept on its line whatever it holds (the mailer escapes the rest).
    const [organization, inviter] = [organizationName, caller.user.name || caller.user.email].map(visibleLine);
    const outcome = await deps.mailer.send({
      to: [email],
      subject: `You are invited to ${organization} on Outpost`,
      text: `${inviter} (${caller.user.email}) invited you to join ${organization} on Outpost as ${role === "admin" ? "an admin" : "a member"}.\n\nOpen this link to accept (sign up first with this email address if you have no account):\n${link}\n\nThe link works once, for 7 days.\n`,
    });
    if (!outcome.ok) {
      emailError = outcome.error;
      deps.logger.warn({ error: outcome.error, invitationId: row.id }, "the invitation email was not sent");
    }
  } else {
    emailError = "this Outpost has no SMTP server configured: send the link yourself";
  }
  return { invitation: invitationToProto(row), token: secret.value, link, emailSent: emailError === "", emailError };
}

const inviteMember =
  (deps: InvitationDeps): Impl["inviteMember"] =>
  async (req, ctx) =>
    create(
      InviteMemberResponseSchema,
      await sendInvitation(deps, entityManager(ctx), requireUser(ctx), { organizationSlug: req.organizationSlug, email: req.email, role: roleFromProto(req.role) }),
    );

const listInvitations =
  (deps: InvitationDeps): Impl["listInvitations"] =>
  async (req, ctx) => {
    const em = entityManager(ctx);
    const access = await requireManager(em, requireUser(ctx), req.organizationSlug);
    const rows = await listInvitationRows(deps.statements.on(em), access.organization.id, req.includeClosed);
    return create(ListInvitationsResponseSchema, { invitations: rows.map(invitationToProto) });
  };

const revokeInvitation =
  (deps: InvitationDeps): Impl["revokeInvitation"] =>
  async (req, ctx) => {
    const caller = requireUser(ctx);
    await entityManager(ctx).transactional(async (tx) => {
      const access = await requireManager(tx, caller, req.organizationSlug);
      const query = deps.statements.on(tx);
      const row = await findInvitationById(query, req.invitationId);
      if (!row || row.organization_id !== access.organization.id) throw fail("not_found", "invitation not found");
      if (!(await markRevoked(query, access.organization.id, row.id)))
        throw fail("failed_precondition", `this invitation is ${row.status === "accepted" ? "accepted" : "revoked"} already`);
      recordInOrganization(tx, caller, access, {
        action: "invitation.revoked",
        targetType: "invitation",
        targetId: row.id,
        details: { email: row.email, role: row.role },
      });
    });
    return create(RevokeInvitationResponseSchema, {});
  };

const getInvitation =
  (deps: InvitationDeps): Impl["getInvitation"] =>
  async (req, ctx) => {
    const caller = requireUser(ctx);
    const row = await invitationOf(deps.statements.on(entityManager(ctx)), req.token);
    return create(GetInvitationResponseSchema, {
      organizationName: row.organization_name,
      organizationSlug: row.organization_slug,
      role: roleToProto(row.role),
      inviterName: row.inviter_name ?? "",
      inviterEmail: row.inviter_email ?? "",
      status: statuses[row.status],
      expiresAt: timestampFromDate(row.expires_at),
      forCaller: row.email === normalizeEmail(caller.user.email),
    });
  };

const acceptInvitation =
  (deps: InvitationDeps): Impl["acceptInvitation"] =>
  async (req, ctx) => {
    const caller = requireUser(ctx);
    return entityManager(ctx).transactional(async (tx) => {
      const query = deps.statements.on(tx);
      const row = await invitationOf(query, req.token);
      // The address is not named: the link may have reached someone it was not meant for.
      if (row.email !== normalizeEmail(caller.user.email)) {
        throw fail("permission_denied", "this invitation is for another email address: sign in with the account it was sent to");
      }
      if (row.status !== "pending") throw fail("failed_precondition", closedReasons[row.status]);
      // An account signed up with someone else's address has the address, not its mail: only the
      // mailed link (or the operator) shows that the invitation reached its owner.
      const user = await tx.findOneOrFail(User, { id: caller.user.id });
      if (!user.emailVerifiedAt) throw unverified(user.email);
      if (await tx.count(Membership, { organization: row.organization_id, user: caller.user.id })) {
        throw fail("failed_precondition", `you are already a member of ${row.organization_name}`);
      }
      if (!(await markAccepted(query, row.id, caller.user.id))) throw fail("failed_precondition", "this invitation has just been used or revoked");
      const organization = await tx.findOneOrFail(Organization, { id: row.organization_id });
      const membership = tx.create(Membership, { organization, user, role: row.role });
      recordActivity(tx, caller, {
        organizationId: organization.id,
        action: "invitation.accepted",
        targetType: "invitation",
        targetId: row.id,
        details: { email: row.email, role: row.role, invited_by: row.inviter_email ?? "" },
      });
      await tx.flush();
      return create(AcceptInvitationResponseSchema, { member: memberToProto(membership), organization: organizationToProto(organization, row.role) });
    });
  };

/**
 * Within the transaction that removes a member or changes their role: ends the pending
 * invitations they sent that they could no longer send, each an `invitation.revoked` event. An
 * invitation carries its inviter's authority, so it must not outlive it: a removed admin's link
 * would otherwise bring someone (their own second address) back in after them. Gone or made a
 * member, every one; made an admin, those inviting admins (only owners may).
 */
export async function revokeInvitationsOfInviter(
  tx: EntityManager,
  caller: UserCaller,
  access: OrganizationAccess,
  inviter: { userId: string; role: Role | null },
): Promise<void> {
  // An owner may invite as anything.
  if (inviter.role === "owner") return;
  const reason = inviter.role === null ? "inviter_left_organization" : "inviter_role_changed";
  const role = inviter.role === "admin" ? "admin" : undefined;
  for (const row of await revokeInvitationsSentBy(inTransaction(tx), access.organization.id, inviter.userId, role)) {
    recordInOrganization(tx, caller, access, {
      action: "invitation.revoked",
      targetType: "invitation",
      targetId: row.id,
      details: { email: row.email, role: row.role, reason },
    });
  }
}

type InvitationMethods = Pick<Impl, "inviteMember" | "listInvitations" | "revokeInvitation" | "getInvitation" | "acceptInvitation">;

export function invitationMethods(deps: InvitationDeps): InvitationMethods {
  return {
    inviteMember: inviteMember(deps),
    listInvitations: listInvitations(deps),
    revokeInvitation: revokeInvitation(deps),
    getInvitation: getInvitation(deps),
    acceptInvitation: acceptInvitation(deps),
  };
}
