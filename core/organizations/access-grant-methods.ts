/**
 * Server access grants, part of OrganizationsService: a member sees and acts on only the servers
 * granted to them, within each grant's actions and constraints (owners and admins do everything);
 * managers grant and revoke, and any member reads their own (getCurrentMember).
 */
import type { ServiceImpl } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import type { EntityManager } from "@mikro-orm/postgresql";
import {
  CreateAccessGrantResponseSchema,
  GetCurrentMemberResponseSchema,
  ListAccessGrantsResponseSchema,
  OrganizationsService,
  RevokeAccessGrantResponseSchema,
} from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { AccessGrant, Membership, Server } from "../db/entities.ts";
import { entityManager, requireUser } from "../context.ts";
import type { CoreDeps } from "../deps.ts";
import { fail } from "../errors.ts";
import { holdManager, requireManager, requireMember, type OrganizationAccess } from "../access.ts";
import { accessGrantToProto } from "../convert.ts";
import { roleToProto } from "../roles.ts";
import { termsFromProto, type GrantLimits } from "../grant-rules.ts";
import { recordInOrganization } from "./organization-activity.ts";
import type { UserCaller } from "../context.ts";

type Impl = ServiceImpl<typeof OrganizationsService>;
type AccessGrantMethods = Pick<Impl, "createAccessGrant" | "listAccessGrants" | "revokeAccessGrant" | "getCurrentMember">;
type GrantDeps = Pick<CoreDeps, "clock">;

/** What a new grant allows and within what. */
export interface GrantTerms extends GrantLimits {
  actions: string[];
}

/**
 * Within a transaction that holds the organization ({@link holdManager}): gives the member (role member) a grant to the server, recorded as
 * access_grant.created. With `replace`, a grant they already hold to it goes first (an approved
 * request); without, holding one is `grant_exists`.
 */
export async function writeGrant(
  tx: EntityManager,
  caller: UserCaller,
  access: OrganizationAccess,
  target: { userId: string; serverId: string; replace: boolean },
  terms: GrantTerms,
): Promise<AccessGrant> {
  const membership = await tx.findOne(Membership, { organization: access.organization.id, user: target.userId });
  if (!membership) throw fail("not_found", "member not found");
  const server = await tx.findOne(Server, { id: target.serverId, organization: access.organization.id });
  if (!server) throw fail("not_found", "server not found");
  if (membership.role !== "member") {
    throw fail("failed_precondition", "owners and admins already see every server; grants are for members");
  }
  const where = { server: server.id, user: target.userId };
  if (target.replace) await tx.nativeDelete(AccessGrant, where);
  else if (await tx.count(AccessGrant, where)) throw fail("grant_exists", "this member already has access to this server");
  const grant = tx.create(AccessGrant, { organization: access.organization, server, user: target.userId, ...terms, uses: 0, firstUsedAt: null });
  recordInOrganization(tx, caller, access, {
    action: "access_grant.created",
    targetType: "user",
    targetId: target.userId,
    serverId: server.id,
    details: {
      server: server.name,
      actions: terms.actions.join(","),
      ...(terms.expiresAt && { expiresAt: terms.expiresAt.toISOString() }),
      ...(terms.maxUses !== null && { maxUses: String(terms.maxUses) }),
      ...(terms.durationSeconds !== null && { durationSeconds: String(terms.durationSeconds) }),
      ...(terms.filePaths.length > 0 && { filePaths: terms.filePaths.join(", ") }),
    },
  });
  await tx.flush();
  return grant;
}

const createAccessGrant =
  (deps: GrantDeps): Impl["createAccessGrant"] =>
  async (req, ctx) => {
    const caller = requireUser(ctx);
    const now = deps.clock.now();
    const terms = termsFromProto(req, now);
    return entityManager(ctx).transactional(async (tx) => {
      const access = await holdManager(tx, caller, req.organizationSlug);
      const grant = await writeGrant(tx, caller, access, { userId: req.userId, serverId: req.serverId, replace: false }, terms);
      return create(CreateAccessGrantResponseSchema, { accessGrant: accessGrantToProto(grant, now) });
    });
  };

const listAccessGrants =
  (deps: GrantDeps): Impl["listAccessGrants"] =>
  async (req, ctx) => {
    const em = entityManager(ctx);
    const access = await requireManager(em, requireUser(ctx), req.organizationSlug);
    const where = {
      organization: access.organization.id,
      ...(req.userId !== undefined && { user: req.userId }),
      ...(req.serverId !== undefined && { server: req.serverId }),
    };
    const grants = await em.find(AccessGrant, where, { orderBy: { createdAt: "asc", id: "asc" } });
    const now = deps.clock.now();
    return create(ListAccessGrantsResponseSchema, { accessGrants: grants.map((g) => accessGrantToProto(g, now)) });
  };

const revokeAccessGrant: Impl["revokeAccessGrant"] = async (req, ctx) => {
  const caller = requireUser(ctx);
  await entityManager(ctx).transactional(async (tx) => {
    const access = await requireManager(tx, caller, req.organizationSlug);
    const where = { organization: access.organization.id, server: req.serverId, user: req.userId };
    const grant = await tx.findOne(AccessGrant, where, { populate: ["server"] });
    if (!grant) throw fail("not_found", "access grant not found");
    tx.remove(grant);
    recordInOrganization(tx, caller, access, {
      action: "access_grant.revoked",
      targetType: "user",
      targetId: req.userId,
      serverId: req.serverId,
      details: { server: grant.server.name },
    });
  });
  return create(RevokeAccessGrantResponseSchema, {});
};

const getCurrentMember =
  (deps: GrantDeps): Impl["getCurrentMember"] =>
  async (req, ctx) => {
    const em = entityManager(ctx);
    const caller = requireUser(ctx);
    const access = await requireMember(em, caller, req.organizationSlug);
    const grants = await em.find(AccessGrant, { organization: access.organization.id, user: caller.user.id }, { orderBy: { createdAt: "asc", id: "asc" } });
    const now = deps.clock.now();
    return create(GetCurrentMemberResponseSchema, {
      userId: caller.user.id,
      role: roleToProto(access.role),
      accessGrants: grants.map((g) => accessGrantToProto(g, now)),
    });
  };

export function accessGrantMethods(deps: GrantDeps): AccessGrantMethods {
  return {
    createAccessGrant: createAccessGrant(deps),
    listAccessGrants: listAccessGrants(deps),
    revokeAccessGrant,
    getCurrentMember: getCurrentMember(deps),
  };
}
