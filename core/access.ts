/**
 * Authorization: each rule of who may do what lives here once. Services ask these functions and
 * never decide access themselves.
 */
import { LockMode } from "@mikro-orm/core";
import type { EntityManager } from "@mikro-orm/postgresql";
import { AccessGrant, Membership, Organization, Server } from "./db/entities.ts";
import type { UserCaller } from "./context.ts";
import type { Db } from "./db/statements.ts";
import type { CoreConfig, PlanLimits } from "./deps.ts";
import { fail } from "./errors.ts";
import { isManager, type Role } from "./roles.ts";
import { findServerAccess } from "./access-queries.ts";

/**
 * Whether the caller may reach this organization at all: an organization API key reaches its own
 * organization alone, and everything of another looks absent (callers answer `not_found`).
 */
export function withinKeyOrganization(caller: UserCaller, organizationId: string): boolean {
  const confinedTo = caller.credential.organization;
  return !confinedTo || confinedTo.id === organizationId;
}

export interface OrganizationAccess {
  organization: Organization;
  role: Role;
}

/**
 * The caller's membership of the organization with this slug. A non-member gets the same
 * `not_found` whether or not the organization exists, so slugs of others do not leak.
 */
export async function requireMember(em: EntityManager, caller: UserCaller, slug: string): Promise<OrganizationAccess> {
  const membership = await em.findOne(
    Membership,
    { user: caller.user.id, organization: { slug } },
    { populate: ["organization"] },
  );
  if (!membership || !withinKeyOrganization(caller, membership.organization.id)) throw fail("not_found", `organization "${slug}" not found`);
  return { organization: membership.organization, role: membership.role as Role };
}

/** Like {@link requireMember}, and the caller must be an owner or an admin. */
export async function requireManager(em: EntityManager, caller: UserCaller, slug: string): Promise<OrganizationAccess> {
  const access = await requireMember(em, caller, slug);
  if (!isManager(access.role)) throw fail("permission_denied", "only an owner or admin of the organization can do this");
  return access;
}

/** Like {@link requireMember}, and the caller must be an owner. */
export async function requireOwner(em: EntityManager, caller: UserCaller, slug: string): Promise<OrganizationAccess> {
  const access = await requireMember(em, caller, slug);
  if (access.role !== "owner") throw fail("permission_denied", "only an owner of the organization can do this");
  return access;
}

export interface ServerAccess extends OrganizationAccess {
  server: Server;
}

/**
 * A server the caller may see: owners and admins see every server of their organization, a
 * member only those granted to them. Outside the organization the server does not exist.
 *
 * One statement decides and loads the server and its organization, which are then merged into
 * the EntityManager as if found there: this runs on every call about a server (a console command,
 * its players), and the ORM's three finds cost more CPU than the rest of such a call. Merging
 * refreshes a server or organization the EntityManager already holds, so call this before
 * changing either, never after (every caller does).
 */
export async function requireServer({ em, query }: Db, caller: UserCaller, serverId: string): Promise<ServerAccess> {
  const row = await findServerAccess(query, caller.user.id, serverId);
  if (!row || !withinKeyOrganization(caller, String(row.organization.id))) throw fail("not_found", "server not found");
  if (!isManager(row.role) && !row.granted) throw fail("permission_denied", "you have no access to this server; ask an owner or admin for a grant");
  const organization = em.map(Organization, row.organization);
  const server = em.map(Server, row.server);
  return { organization, role: row.role, server };
}

/** Like {@link requireServer}, and the caller must be an owner or admin of its organization. */
export async function requireServerManager(db: Db, caller: UserCaller, serverId: string): Promise<ServerAccess> {
  const access = await requireServer(db, caller, serverId);
  if (!isManager(access.role)) throw fail("permission_denied", "only an owner or admin of the organization can do this");
  return access;
}

/** The servers of the organization the caller can see (all for managers, granted ones otherwise). */
export async function accessibleServers(em: EntityManager, caller: UserCaller, access: OrganizationAccess): Promise<Server[]> {
  const where = isManager(access.role)
    ? { organization: access.organization.id }
    : { organization: access.organization.id, id: { $in: await grantedServerIds(em, caller.user.id, access.organization.id) } };
  return em.find(Server, where, { orderBy: { createdAt: "asc", id: "asc" } });
}

async function grantedServerIds(em: EntityManager, userId: string, organizationId: string): Promise<string[]> {
  const grants = await em.find(AccessGrant, { user: userId, organization: organizationId }, { fields: ["server"] });
  return grants.map((g) => g.server.id);
}

/** Platform administration requires the platform admin flag. */
export function requirePlatformAdmin(caller: UserCaller): void {
  if (!caller.user.platformAdmin) throw fail("platform_admin_required", "only a platform admin can do this");
}

/** The limits of a plan PLANS configures, by its own names only ("constructor" is no plan), or undefined. */
export function configuredPlan(plans: Readonly<Record<string, PlanLimits>>, name: string): PlanLimits | undefined {
  return Object.hasOwn(plans, name) ? plans[name] : undefined;
}

/** An organization's limits. A plan no longer in PLANS allows nothing new, so it shows as 0 of each. */
export function planLimits(config: CoreConfig, plan: string): PlanLimits {
  return configuredPlan(config.plans, plan) ?? { servers: 0, gameOAuthClients: 0 };
}

/**
 * Within a transaction: locks the organization's row, so concurrent creations are counted one
 * after another, and refuses when the plan allows no more of the resource.
 */
export async function reservePlanCapacity(
  em: EntityManager,
  config: CoreConfig,
  organizationId: string,
  resource: keyof PlanLimits,
  countExisting: () => Promise<number>,
): Promise<void> {
  const organization = await em.findOneOrFail(Organization, { id: organizationId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
  const limits = configuredPlan(config.plans, organization.plan);
  if (!limits) {
    throw fail(
      "failed_precondition",
      `this organization's plan "${organization.plan}" is no longer offered here, so nothing can be added; a platform admin can move it to another plan`,
    );
  }
  const limit = limits[resource];
  const used = await countExisting();
  if (used >= limit) {
    const what = resource === "servers" ? "servers" : "Game OAuth clients";
    throw fail("plan_limit_reached", `the ${organization.plan} plan allows ${limit} ${what}; this organization has ${used}`);
  }
}
