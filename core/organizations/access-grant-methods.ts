/**
 * Server access grants, part of OrganizationsService: a member sees only the servers granted to
 * them (owners and admins see all), and managers grant and revoke.
 */
import type { ServiceImpl } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import {
  CreateAccessGrantResponseSchema,
  ListAccessGrantsResponseSchema,
  OrganizationsService,
  RevokeAccessGrantResponseSchema,
} from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { AccessGrant, Membership, Server } from "../db/entities.ts";
import { entityManager, requireUser } from "../context.ts";
import { fail } from "../errors.ts";
import { requireManager } from "../access.ts";
import { accessGrantToProto } from "../convert.ts";
import { recordInOrganization } from "./organization-activity.ts";

type Impl = ServiceImpl<typeof OrganizationsService>;
type AccessGrantMethods = Pick<Impl, "createAccessGrant" | "listAccessGrants" | "revokeAccessGrant">;

const createAccessGrant: Impl["createAccessGrant"] = async (req, ctx) => {
  const caller = requireUser(ctx);
  return entityManager(ctx).transactional(async (tx) => {
    const access = await requireManager(tx, caller, req.organizationSlug);
    const membership = await tx.findOne(Membership, { organization: access.organization.id, user: req.userId });
    if (!membership) throw fail("not_found", "member not found");
    const server = await tx.findOne(Server, { id: req.serverId, organization: access.organization.id });
    if (!server) throw fail("not_found", "server not found");
    if (membership.role !== "member") {
      throw fail("failed_precondition", "owners and admins already see every server; grants are for members");
    }
    if (await tx.count(AccessGrant, { server: server.id, user: req.userId })) {
      throw fail("grant_exists", "this member already has access to this server");
    }
    const grant = tx.create(AccessGrant, { organization: access.organization, server, user: req.userId });
    recordInOrganization(tx, caller, access, {
      action: "access_grant.created",
      targetType: "user",
      targetId: req.userId,
      serverId: server.id,
      details: { server: server.name },
    });
    await tx.flush();
    return create(CreateAccessGrantResponseSchema, { accessGrant: accessGrantToProto(grant) });
  });
};

const listAccessGrants: Impl["listAccessGrants"] = async (req, ctx) => {
  const em = entityManager(ctx);
  const access = await requireManager(em, requireUser(ctx), req.organizationSlug);
  const where = {
    organization: access.organization.id,
    ...(req.userId !== undefined && { user: req.userId }),
    ...(req.serverId !== undefined && { server: req.serverId }),
  };
  const grants = await em.find(AccessGrant, where, { orderBy: { createdAt: "asc", id: "asc" } });
  return create(ListAccessGrantsResponseSchema, { accessGrants: grants.map(accessGrantToProto) });
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

export const accessGrantMethods: AccessGrantMethods = { createAccessGrant, listAccessGrants, revokeAccessGrant };
