import type { ServiceImpl } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import { LockMode, type FilterQuery } from "@mikro-orm/core";
import {
  AdminService,
  ListPlansResponseSchema,
  ListUsersResponseSchema,
  PlanSchema,
  SetOrganizationPlanResponseSchema,
  SetOrganizationVerifiedResponseSchema,
  SetPlatformAdminResponseSchema,
} from "../../gen/outpost/admin/v1/admin_service_pb.js";
import { Membership, Organization, User } from "../db/entities.ts";
import { entityManager, requireUser } from "../context.ts";
import type { CoreDeps } from "../deps.ts";
import { requirePlatformAdmin } from "../access.ts";
import { configuredPlan } from "../plans.ts";
import { fail, fieldFail } from "../errors.ts";
import { recordActivity } from "../activity/record.ts";
import { likeLiteral } from "../sql.ts";
import { frozenError, frozenSet, recordFreezeChange } from "../servers/frozen.ts";
import { organizationToProto, userToProto } from "../convert.ts";
import { createAccountOAuthClientMethods } from "./account-oauth-clients.ts";

const defaultLimit = 50;

type Impl = ServiceImpl<typeof AdminService>;

const listUsers: Impl["listUsers"] = async (req, ctx) => {
  requirePlatformAdmin(requireUser(ctx));
  const where: FilterQuery<User> = req.query ? { email: { $like: `%${likeLiteral(req.query.toLowerCase())}%` } } : {};
  const users = await entityManager(ctx).find(User, where, { orderBy: { email: "asc" }, limit: req.limit ?? defaultLimit });
  return create(ListUsersResponseSchema, { users: users.map(userToProto) });
};

const setPlatformAdmin: Impl["setPlatformAdmin"] = async (req, ctx) => {
  const caller = requireUser(ctx);
  requirePlatformAdmin(caller);
  const platformAdmin = req.platformAdmin === true; // required by validation
  if (req.userId === caller.user.id && !platformAdmin) {
    throw fail("failed_precondition", "you cannot take away your own platform admin flag");
  }
  return entityManager(ctx).transactional(async (tx) => {
    const user = await tx.findOne(User, { id: req.userId });
    if (!user) throw fail("not_found", "user not found");
    if (user.platformAdmin !== platformAdmin) {
      user.platformAdmin = platformAdmin;
      recordActivity(tx, caller, {
        action: platformAdmin ? "user.platform_admin_granted" : "user.platform_admin_revoked",
        targetType: "user",
        targetId: user.id,
        details: { email: user.email },
      });
    }
    return create(SetPlatformAdminResponseSchema, { user: userToProto(user) });
  });
};

const listPlans =
  ({ config }: Pick<CoreDeps, "config">): Impl["listPlans"] =>
  async (_req, ctx) => {
    requirePlatformAdmin(requireUser(ctx));
    return create(ListPlansResponseSchema, {
      plans: Object.entries(config.plans).map(([name, limits]) =>
        create(PlanSchema, {
          name,
          serverLimit: limits.servers,
          gameOauthClientLimit: limits.gameOAuthClients,
          noteLimit: limits.notes,
          assistantQueriesPerDay: limits.assistantQueriesPerDay,
          assistantToolActionsPerDay: limits.assistantToolActionsPerDay,
          emailsPerHour: limits.emailsPerHour,
        }),
      ),
    });
  };

/**
 * Moves an organization to another plan. Lowering it below the servers it has freezes the newest
 * beyond the limit, raising it unfreezes the oldest frozen first (core/servers/frozen.ts): each
 * change is an activity event, and agents of servers it froze are sent away at once here, at
 * their next heartbeat on other instances.
 */
const setOrganizationPlan =
  ({ config, statements, agents }: Pick<CoreDeps, "config" | "statements" | "agents">): Impl["setOrganizationPlan"] =>
  async (req, ctx) => {
    const caller = requireUser(ctx);
    requirePlatformAdmin(caller);
    if (!configuredPlan(config.plans, req.plan)) {
      throw fieldFail([{ field: "plan", message: `unknown plan "${req.plan}"; configured: ${Object.keys(config.plans).join(", ")}` }]);
    }
    const { response, frozen } = await entityManager(ctx).transactional(async (tx) => {
      // Locked, so plan changes, deletions and creations see the organization's servers one after another.
      const organization = await tx.findOne(Organization, { slug: req.organizationSlug }, { lockMode: LockMode.PESSIMISTIC_WRITE });
      if (!organization) throw fail("not_found", `organization "${req.organizationSlug}" not found`);
      const previous = organization.plan;
      const query = statements.on(tx);
      const before = await frozenSet(query, config, organization.id, previous);
      const after = await frozenSet(query, config, organization.id, req.plan, before.servers);
      organization.plan = req.plan;
      recordActivity(tx, caller, {
        organizationId: organization.id,
        action: "organization.plan_changed",
        targetType: "organization",
        targetId: organization.id,
        details: { from: previous, to: req.plan },
      });
      const change = recordFreezeChange(tx, caller, organization, config, before, after);
      const membership = await tx.findOne(Membership, { organization: organization.id, user: caller.user.id });
      const response = create(SetOrganizationPlanResponseSchema, {
        organization: organizationToProto(organization, membership?.role ?? ""),
      });
      return { response, frozen: change.frozen.map((s) => ({ id: s.id, freeze: after.frozen.get(s.id)! })) };
    });
    for (const { id, freeze } of frozen) agents.endServer(id, frozenError(freeze));
    return response;
  };

const setOrganizationVerified: Impl["setOrganizationVerified"] = async (req, ctx) => {
  const caller = requireUser(ctx);
  requirePlatformAdmin(caller);
  const verified = req.verified === true; // required by validation
  return entityManager(ctx).transactional(async (tx) => {
    const organization = await tx.findOne(Organization, { slug: req.organizationSlug });
    if (!organization) throw fail("not_found", `organization "${req.organizationSlug}" not found`);
    if (organization.verified !== verified) {
      organization.verified = verified;
      recordActivity(tx, caller, {
        organizationId: organization.id,
        action: verified ? "organization.verified" : "organization.unverified",
        targetType: "organization",
        targetId: organization.id,
        details: { slug: organization.slug },
      });
    }
    const membership = await tx.findOne(Membership, { organization: organization.id, user: caller.user.id });
    return create(SetOrganizationVerifiedResponseSchema, {
      organization: organizationToProto(organization, membership?.role ?? ""),
    });
  });
};

/** The platform admin's service: users, plans, organizations' plan and verification, and Account OAuth clients. */
export function createAdminService(deps: CoreDeps): Impl {
  return {
    ...createAccountOAuthClientMethods(deps),
    listUsers,
    setPlatformAdmin,
    listPlans: listPlans(deps),
    setOrganizationPlan: setOrganizationPlan(deps),
    setOrganizationVerified,
  };
}
