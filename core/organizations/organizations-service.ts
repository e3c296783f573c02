/**
 * OrganizationsService: organizations themselves (here), their members (member-methods.ts), their
 * server access grants (access-grant-methods.ts) and requests for them (access-request-methods.ts),
 * and their Game OAuth clients (game-oauth-clients.ts).
 */
import { organizationStatsMethods } from "./organization-stats.ts";
import type { ServiceImpl } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import {
  CreateOrganizationResponseSchema,
  DeleteOrganizationResponseSchema,
  GetOrganizationResponseSchema,
  ListOrganizationsResponseSchema,
  OrganizationsService,
  UpdateOrganizationResponseSchema,
} from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { PlanUsageSchema } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { Membership, Organization, Server } from "../db/entities.ts";
import { GameOAuthClient } from "../db/game-oauth-entities.ts";
import { countNotes } from "../knowledge/note-queries.ts";
import { entityManager, requireUser } from "../context.ts";
import type { CoreDeps } from "../deps.ts";
import { fail } from "../errors.ts";
import { planLimits, requireManager, requireMember, requireOwner } from "../access.ts";
import { recordActivity } from "../activity/record.ts";
import { organizationToProto } from "../convert.ts";
import { createGameOAuthClientMethods } from "./game-oauth-clients.ts";
import { memberMethods } from "./member-methods.ts";
import { accessGrantMethods } from "./access-grant-methods.ts";
import { accessRequestMethods } from "./access-request-methods.ts";
import { recordInOrganization } from "./organization-activity.ts";
import { invitationMethods } from "./invitation-methods.ts";
import { organizationApiKeyMethods } from "./organization-api-keys.ts";

type Impl = ServiceImpl<typeof OrganizationsService>;

/** Slugs that would collide with the dashboard's own paths. */
const reservedSlugs = new Set(["api", "admin", "account", "new", "settings", "login", "logout", "sign-in", "sign-up", "oauth2"]);

const createOrganization =
  ({ config }: Pick<CoreDeps, "config">): Impl["createOrganization"] =>
  async (req, ctx) => {
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
  };

const listOrganizations: Impl["listOrganizations"] = async (_req, ctx) => {
  const caller = requireUser(ctx);
  const orderBy = { organization: { name: "asc", slug: "asc" } } as const;
  // An organization API key sees its own organization alone.
  const confinedTo = caller.credential.organization;
  const where = confinedTo ? { user: caller.user.id, organization: confinedTo.id } : { user: caller.user.id };
  const memberships = await entityManager(ctx).find(Membership, where, { populate: ["organization"], orderBy });
  return create(ListOrganizationsResponseSchema, { organizations: memberships.map((m) => organizationToProto(m.organization, m.role)) });
};

const getOrganization =
  ({ config, statements }: Pick<CoreDeps, "config" | "statements">): Impl["getOrganization"] =>
  async (req, ctx) => {
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
        notes: await countNotes(statements.on(em), access.organization.id),
        noteLimit: limits.notes,
      }),
    });
  };

const updateOrganization: Impl["updateOrganization"] = async (req, ctx) => {
  const caller = requireUser(ctx);
  return entityManager(ctx).transactional(async (tx) => {
    const access = await requireManager(tx, caller, req.organizationSlug);
    const previous = access.organization.name;
    access.organization.name = req.name;
    recordInOrganization(tx, caller, access, {
      action: "organization.renamed",
      targetType: "organization",
      targetId: access.organization.id,
      details: { from: previous, to: req.name },
    });
    return create(UpdateOrganizationResponseSchema, { organization: organizationToProto(access.organization, access.role) });
  });
};

const deleteOrganization =
  ({ agents }: Pick<CoreDeps, "agents">): Impl["deleteOrganization"] =>
  async (req, ctx) => {
    const caller = requireUser(ctx);
    const serverIds = await entityManager(ctx).transactional(async (tx) => {
      const access = await requireOwner(tx, caller, req.organizationSlug);
      recordInOrganization(tx, caller, access, {
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
    for (const serverId of serverIds) agents.endServer(serverId, fail("unauthenticated", "the server's organization was deleted from Outpost"));
    return create(DeleteOrganizationResponseSchema, {});
  };

export function createOrganizationsService(deps: CoreDeps): ServiceImpl<typeof OrganizationsService> {
  return {
    ...createGameOAuthClientMethods(deps),
    ...memberMethods(deps),
    ...accessGrantMethods(deps),
    ...accessRequestMethods(deps),
    ...invitationMethods(deps),
    ...organizationApiKeyMethods(deps),
    ...organizationStatsMethods(deps),
    createOrganization: createOrganization(deps),
    listOrganizations,
    getOrganization: getOrganization(deps),
    updateOrganization,
    deleteOrganization: deleteOrganization(deps),
  };
}
