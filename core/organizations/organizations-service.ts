import type { ServiceImpl } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import { LockMode } from "@mikro-orm/core";
import type { EntityManager } from "@mikro-orm/postgresql";
import {
  AddMemberResponseSchema,
  CreateAccessGrantResponseSchema,
  CreateOrganizationResponseSchema,
  DeleteOrganizationResponseSchema,
  GetOrganizationResponseSchema,
  ListAccessGrantsResponseSchema,
  ListMembersResponseSchema,
  ListOrganizationsResponseSchema,
  OrganizationsService,
  RemoveMemberResponseSchema,
  RevokeAccessGrantResponseSchema,
  UpdateMemberRoleResponseSchema,
  UpdateOrganizationResponseSchema,
} from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { PlanUsageSchema } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { AccessGrant, Membership, Organization, Server, User } from "../db/entities.ts";
import { GameOAuthClient } from "../db/game-oauth-entities.ts";
import { entityManager, requireUser, type UserCaller } from "../context.ts";
import type { CoreDeps } from "../deps.ts";
import { fail } from "../errors.ts";
import { planLimits, requireManager, requireMember, requireOwner, type OrganizationAccess } from "../access.ts";
import { recordActivity } from "../activity/record.ts";
import { accessGrantToProto, memberToProto, organizationToProto } from "../convert.ts";
import { roleFromProto, type Role } from "../roles.ts";
import { normalizeEmail } from "../identity/identity-service.ts";
import { createGameOAuthClientMethods } from "./game-oauth-clients.ts";

/** Slugs that would collide with the dashboard's own paths. */
const reservedSlugs = new Set(["api", "admin", "account", "new", "settings", "login", "logout", "sign-in", "sign-up", "oauth2"]);

/** Within a transaction: the membership to change, with the organization's row locked so that
 * two owners cannot demote or remove each other at once and leave none. */
async function lockedMembership(tx: EntityManager, access: OrganizationAccess, userId: string): Promise<Membership> {
  await tx.findOneOrFail(Organization, { id: access.organization.id }, { lockMode: LockMode.PESSIMISTIC_WRITE });
  const membership = await tx.findOne(
    Membership,
    { organization: access.organization.id, user: userId },
    { populate: ["user"], refresh: true },
  );
  if (!membership) throw fail("not_found", "member not found");
  return membership;
}

async function ensureAnotherOwner(tx: EntityManager, membership: Membership): Promise<void> {
  if (membership.role !== "owner") return;
  const owners = await tx.count(Membership, { organization: membership.organization.id, role: "owner" });
  if (owners <= 1) throw fail("last_owner", "an organization needs an owner: make someone else an owner first");
}

export function createOrganizationsService(deps: CoreDeps): ServiceImpl<typeof OrganizationsService> {
  const { config } = deps;
  function activity(tx: EntityManager, caller: UserCaller, access: OrganizationAccess, facts: Omit<Parameters<typeof recordActivity>[2], "organizationId">) {
    recordActivity(tx, caller, { ...facts, organizationId: access.organization.id });
  }

  return {
    ...createGameOAuthClientMethods(deps),

    async createOrganization(req, ctx) {
      const caller = requireUser(ctx);
      if (reservedSlugs.has(req.slug)) throw fail("slug_taken", `the slug "${req.slug}" is reserved`);
      return entityManager(ctx).transactional(async (tx) => {
        if (await tx.count(Organization, { slug: req.slug })) throw fail("slug_taken", `the slug "${req.slug}" is taken`);
        const organization = tx.create(Organization, { slug: req.slug, name: req.name, plan: config.defaultPlan });
        tx.create(Membership, { organization, user: caller.user.id, role: "owner" });
        recordActivity(tx, caller, {
          organizationId: organization.id,
          action: "organization.created",
          targetType: "organization",
          targetId: organization.id,
          details: { slug: organization.slug, name: organization.name },
        });
        await tx.flush();
        return create(CreateOrganizationResponseSchema, { organization: organizationToProto(organization, "owner") });
      });
    },

    async listOrganizations(_req, ctx) {
      const caller = requireUser(ctx);
      const memberships = await entityManager(ctx).find(
        Membership,
        { user: caller.user.id },
        { populate: ["organization"], orderBy: { organization: { name: "asc", slug: "asc" } } },
      );
      return create(ListOrganizationsResponseSchema, {
        organizations: memberships.map((m) => organizationToProto(m.organization, m.role)),
      });
    },

    async getOrganization(req, ctx) {
      const em = entityManager(ctx);
      const access = await requireMember(em, requireUser(ctx), req.organizationSlug);
      const limits = planLimits(config, access.organization.plan);
      return create(GetOrganizationResponseSchema, {
        organization: organizationToProto(access.organization, access.role),
        usage: create(PlanUsageSchema, {
          servers: await em.count(Server, { organization: access.organization.id }),
          serverLimit: limits.servers,
          gameOauthClients: await em.count(GameOAuthClient, { organization: access.organization.id }),
          gameOauthClientLimit: limits.gameOAuthClients,
        }),
      });
    },

    async updateOrganization(req, ctx) {
      const caller = requireUser(ctx);
      return entityManager(ctx).transactional(async (tx) => {
        const access = await requireManager(tx, caller, req.organizationSlug);
        const previous = access.organization.name;
        access.organization.name = req.name;
        activity(tx, caller, access, {
          action: "organization.renamed",
          targetType: "organization",
          targetId: access.organization.id,
          details: { from: previous, to: req.name },
        });
        return create(UpdateOrganizationResponseSchema, { organization: organizationToProto(access.organization, access.role) });
      });
    },

    async deleteOrganization(req, ctx) {
      const caller = requireUser(ctx);
      const serverIds = await entityManager(ctx).transactional(async (tx) => {
        const access = await requireOwner(tx, caller, req.organizationSlug);
        activity(tx, caller, access, {
          action: "organization.deleted",
          targetType: "organization",
          targetId: access.organization.id,
          details: { slug: access.organization.slug, name: access.organization.name },
        });
        await tx.flush();
        const servers = await tx.find(Server, { organization: access.organization.id }, { fields: ["id"] });
        // Members, servers and grants go with it (ON DELETE CASCADE).
        await tx.nativeDelete(Organization, { id: access.organization.id });
        return servers.map((server) => server.id);
      });
      // Their agents' keys stopped working with their servers: end the streams here at once (other
      // instances end theirs at the next heartbeat, and their login commands are refused meanwhile).
      for (const serverId of serverIds) deps.agents.endServer(serverId, fail("unauthenticated", "the server's organization was deleted from Outpost"));
      return create(DeleteOrganizationResponseSchema, {});
    },

    async addMember(req, ctx) {
      const caller = requireUser(ctx);
      const role = roleFromProto(req.role);
      return entityManager(ctx).transactional(async (tx) => {
        const access = await requireManager(tx, caller, req.organizationSlug);
        if (role === "admin" && access.role !== "owner") throw fail("permission_denied", "only an owner can add an admin");
        const user = await tx.findOne(User, { email: normalizeEmail(req.email) });
        if (!user) throw fail("not_found", `no account with the email ${req.email}; they must sign up first`);
        if (await tx.count(Membership, { organization: access.organization.id, user: user.id })) {
          throw fail("already_member", `${user.email} is already a member`);
        }
        const membership = tx.create(Membership, { organization: access.organization, user, role });
        activity(tx, caller, access, {
          action: "member.added",
          targetType: "user",
          targetId: user.id,
          details: { email: user.email, role },
        });
        await tx.flush();
        return create(AddMemberResponseSchema, { member: memberToProto(membership) });
      });
    },

    async listMembers(req, ctx) {
      const em = entityManager(ctx);
      const access = await requireMember(em, requireUser(ctx), req.organizationSlug);
      const memberships = await em.find(
        Membership,
        { organization: access.organization.id },
        { populate: ["user"], orderBy: { createdAt: "asc", id: "asc" } },
      );
      return create(ListMembersResponseSchema, { members: memberships.map(memberToProto) });
    },

    async updateMemberRole(req, ctx) {
      const caller = requireUser(ctx);
      const role = roleFromProto(req.role);
      return entityManager(ctx).transactional(async (tx) => {
        const access = await requireOwner(tx, caller, req.organizationSlug);
        const membership = await lockedMembership(tx, access, req.userId);
        const previous = membership.role as Role;
        if (previous !== role) {
          if (role !== "owner") await ensureAnotherOwner(tx, membership);
          membership.role = role;
          activity(tx, caller, access, {
            action: "member.role_changed",
            targetType: "user",
            targetId: req.userId,
            details: { email: membership.user.email, from: previous, to: role },
          });
        }
        return create(UpdateMemberRoleResponseSchema, { member: memberToProto(membership) });
      });
    },

    async removeMember(req, ctx) {
      const caller = requireUser(ctx);
      const leaving = req.userId === caller.user.id;
      await entityManager(ctx).transactional(async (tx) => {
        const access = leaving
          ? await requireMember(tx, caller, req.organizationSlug)
          : await requireManager(tx, caller, req.organizationSlug);
        const membership = await lockedMembership(tx, access, req.userId);
        if (!leaving && membership.role !== "member" && access.role !== "owner") {
          throw fail("permission_denied", "only an owner can remove an owner or admin");
        }
        await ensureAnotherOwner(tx, membership);
        await tx.nativeDelete(AccessGrant, { organization: access.organization.id, user: req.userId });
        tx.remove(membership);
        activity(tx, caller, access, {
          action: leaving ? "member.left" : "member.removed",
          targetType: "user",
          targetId: req.userId,
          details: { email: membership.user.email, role: membership.role },
        });
      });
      return create(RemoveMemberResponseSchema, {});
    },

    async createAccessGrant(req, ctx) {
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
        activity(tx, caller, access, {
          action: "access_grant.created",
          targetType: "user",
          targetId: req.userId,
          serverId: server.id,
          details: { server: server.name },
        });
        await tx.flush();
        return create(CreateAccessGrantResponseSchema, { accessGrant: accessGrantToProto(grant) });
      });
    },

    async listAccessGrants(req, ctx) {
      const em = entityManager(ctx);
      const access = await requireManager(em, requireUser(ctx), req.organizationSlug);
      const grants = await em.find(
        AccessGrant,
        {
          organization: access.organization.id,
          ...(req.userId !== undefined && { user: req.userId }),
          ...(req.serverId !== undefined && { server: req.serverId }),
        },
        { orderBy: { createdAt: "asc", id: "asc" } },
      );
      return create(ListAccessGrantsResponseSchema, { accessGrants: grants.map(accessGrantToProto) });
    },

    async revokeAccessGrant(req, ctx) {
      const caller = requireUser(ctx);
      await entityManager(ctx).transactional(async (tx) => {
        const access = await requireManager(tx, caller, req.organizationSlug);
        const grant = await tx.findOne(
          AccessGrant,
          { organization: access.organization.id, server: req.serverId, user: req.userId },
          { populate: ["server"] },
        );
        if (!grant) throw fail("not_found", "access grant not found");
        tx.remove(grant);
        activity(tx, caller, access, {
          action: "access_grant.revoked",
          targetType: "user",
          targetId: req.userId,
          serverId: req.serverId,
          details: { server: grant.server.name },
        });
      });
      return create(RevokeAccessGrantResponseSchema, {});
    },
  };
}
