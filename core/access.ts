/**
 * Authorization: each rule of who may do what lives here once. Services ask these functions and
 * never decide access themselves.
 */
import { LockMode } from "@mikro-orm/core";
import type { EntityManager } from "@mikro-orm/postgresql";
import { Membership, Organization, Server } from "./db/entities.ts";
import type { ServerScope, UserCaller } from "./context.ts";
import { inTransaction, sql, type Db, type SqlRunner } from "./db/sql.ts";
import type { CoreConfig, PlanLimits } from "./deps.ts";
import { fail, type DomainError } from "./errors.ts";
import { isManager, type Role } from "./roles.ts";
import {
  findGrant,
  findServerAccess,
  liveGrantServerIds,
  markGrantFirstUse,
  returnGrantUse,
  spendGrantUse,
  type GrantRow,
  type ServerAccessRow,
} from "./access-queries.ts";
import { grantRefusal, type GrantFacts, type ServerAction } from "./grant-rules.ts";
import { everywhereAccess, filePathAccess, type FilePathAccess } from "./file-paths.ts";
import { appendActivity } from "./activity/record.ts";
import { freezeOf, requireNotFrozen } from "./servers/frozen.ts";
import { configuredPlan } from "./plans.ts";

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
  const membership = await em.findOne(Membership, { user: caller.user.id, organization: { slug } }, { populate: ["organization"] });
  if (!membership || !withinKeyOrganization(caller, membership.organization.id)) throw fail("not_found", `organization "${slug}" not found`);
  return { organization: membership.organization, role: membership.role as Role };
}

/** Like {@link requireMember}, and the caller must be an owner or an admin. */
export async function requireManager(em: EntityManager, caller: UserCaller, slug: string): Promise<OrganizationAccess> {
  const access = await requireMember(em, caller, slug);
  if (!isManager(access.role)) throw fail("permission_denied", "only an owner or admin of the organization can do this");
  return access;
}

/**
 * Within a transaction, first of its locks: holds the organization's row (FOR SHARE, or FOR
 * UPDATE with `update`) and answers the caller's membership as it is once held. Removing or
 * re-roling a member locks the row FOR UPDATE, so this waits for it (and it for this): a removal
 * or role change that committed meanwhile is seen, rather than a grant, request, invitation or
 * key being written for someone no longer there. Grants and access requests take it before any
 * other lock: a decision's inserts need a key-share lock on the organization that a removal holds.
 */
const locks = { share: sql`for share`, update: sql`for update` };

export async function holdMember(em: EntityManager, caller: UserCaller, slug: string, lock: "share" | "update" = "share"): Promise<OrganizationAccess> {
  const { organization } = await requireMember(em, caller, slug);
  await inTransaction(em).run(sql`select 1 from organizations where id = ${organization.id} ${locks[lock]}`);
  const membership = await em.findOne(Membership, { user: caller.user.id, organization: organization.id }, { refresh: true });
  if (!membership) throw fail("not_found", `organization "${slug}" not found`);
  return { organization, role: membership.role as Role };
}

/** Like {@link holdMember}, and the caller must be an owner or an admin. */
export async function holdManager(em: EntityManager, caller: UserCaller, slug: string, lock: "share" | "update" = "share"): Promise<OrganizationAccess> {
  const access = await holdMember(em, caller, slug, lock);
  if (!isManager(access.role)) throw fail("permission_denied", "only an owner or admin of the organization can do this");
  return access;
}

/** Like {@link requireMember}, and the caller must be an owner. */
export async function requireOwner(em: EntityManager, caller: UserCaller, slug: string): Promise<OrganizationAccess> {
  const access = await requireMember(em, caller, slug);
  if (access.role !== "owner") throw fail("permission_denied", "only an owner of the organization can do this");
  return access;
}

/**
 * The server a call is about: its id and, optionally, its organization by id or slug as the
 * caller names it. Every ServersService request about one server carries these fields (the
 * contract's convention: proto/outpost/servers/v1/servers_service.proto), so the request itself
 * is passed; callers inside core that know the organization name it too. A named organization
 * that is not the server's makes the server not found, the answer for an unknown server, so
 * naming one learns nothing.
 */
export interface ServerAddress {
  serverId: string;
  organizationId?: string;
  organizationSlug?: string;
}

export interface ServerAccess extends OrganizationAccess {
  server: Server;
  /** The server's rank among its organization's servers, oldest first: core/servers/frozen.ts decides with it whether it is frozen. */
  rank: number;
}

/** What a call about a server does, for {@link requireServer}. */
export interface ServerUse {
  action: ServerAction;
  /** The service's clock, which grants' expiries are read against. */
  now: Date;
  /**
   * Whether the call spends one of the grant's uses: acting calls do (a console command, opening
   * a console watch), viewing never does, nor does a watch's periodic recheck. Default: every
   * action but "view".
   */
  spend?: boolean;
  /**
   * The plans, which say whether the server is frozen (core/servers/frozen.ts): a frozen server
   * allows only viewing, and refuses anything else before a grant's use is spent or marked.
   */
  plans: CoreConfig["plans"];
}

/**
 * A server the caller may act on: owners and admins may do everything on every server of their
 * organization; a member needs a grant to it that allows `use.action` and still works (not
 * expired, not used up). An acting call spends one use of the grant, atomically; any call starts
 * a grant's duration at its first use. Outside the organization the server does not exist.
 *
 * One statement decides and loads the server and its organization, which are then merged into
 * the EntityManager as if found there: this runs on every call about a server (a console command,
 * its players), and the ORM's three finds cost more CPU than the rest of such a call. Merging
 * refreshes a server or organization the EntityManager already holds, so call this before
 * changing either, never after (every caller does).
 */
export async function requireServer(db: Db, caller: UserCaller, address: ServerAddress, use: ServerUse, scope?: ServerScope): Promise<ServerAccess> {
  const judged = await judgeServerRow(db.query, caller, address, use, scope);
  await spendServerUse(db.query, caller, judged, use);
  return mapServerAccess(db.em, judged.row);
}

/** {@link requireServer}'s decision before anything is spent: the row, and the member's grant that allows the use (none for managers). */
export interface JudgedServer {
  row: ServerAccessRow;
  grant?: GrantRow;
}

/**
 * {@link requireServer}'s decision alone, answering the statement's row as it is instead of
 * entities: the same refusals, with no use spent and no duration started. For a call that only
 * judges (the assistant's gate: the call that then acts goes through its own check), and for one
 * that reads a few of the server's columns and may find after the decision that it cannot act
 * (a console command, on every call: its use is spent by {@link spendServerUse} once it can, and
 * mapping the two rows into the EntityManager would cost more CPU than the rest of its check).
 */
export async function judgeServerRow(query: SqlRunner, caller: UserCaller, address: ServerAddress, use: ServerUse, scope?: ServerScope): Promise<JudgedServer> {
  const row = await loadServerAccess(query, caller, address, scope);
  const grant = isManager(row.role) ? undefined : allowedGrant(row, use);
  if (use.action !== "view") requireNotFrozen(freezeOf(use, String(row.organization.plan), row.rank));
  return { row, grant };
}

/** Whether the call spends one of the grant's uses (see {@link ServerUse.spend}). */
const spends = (use: ServerUse) => use.spend ?? use.action !== "view";

/**
 * The second step: records the member's use of their grant, spending one for an acting call and
 * starting its duration at the first use of any; refuses when a concurrent call spent the last.
 */
export async function spendServerUse(query: SqlRunner, caller: UserCaller, { row, grant }: JudgedServer, use: ServerUse): Promise<void> {
  if (!grant) return;
  if (!spends(use)) {
    if (grant.first_used_at === null) await markGrantFirstUse(query, grant.id, use.now);
    return;
  }
  const spent = await spendGrantUse(query, grant.id, use.action, use.now);
  if (!spent) {
    // Another call spent the last use (or the grant changed) between the read and the update.
    const now = await findGrant(query, grant.id);
    const reason = now && grantRefusal(grantFacts(now), use.action, use.now);
    throw fail("permission_denied", reason || "you have no access to this server; ask an owner or admin for a grant");
  }
  if (spent.max_uses !== null && spent.uses >= spent.max_uses) {
    await appendActivity(query, caller, {
      organizationId: String(row.organization.id),
      action: "access_grant.used_up",
      targetType: "user",
      targetId: caller.user.id,
      serverId: String(row.server.id),
      details: { uses: String(spent.uses), action: use.action },
    });
  }
}

/**
 * Gives back the use {@link spendServerUse} spent, for a call that then could not act at all (a
 * console command the agent never received). A duration it started keeps running.
 */
export async function returnServerUse(query: SqlRunner, judged: JudgedServer, use: ServerUse): Promise<void> {
  if (judged.grant && spends(use)) await returnGrantUse(query, judged.grant.id);
}

/** Like {@link requireServer}, and the caller must be an owner or admin of its organization (grants do not count). */
export async function requireServerManager(db: Db, caller: UserCaller, address: ServerAddress): Promise<ServerAccess> {
  const row = await loadServerAccess(db.query, caller, address, undefined);
  if (!isManager(row.role)) throw fail("permission_denied", "only an owner or admin of the organization can do this");
  return mapServerAccess(db.em, row);
}

/**
 * The addressed server's row for any member of its organization, grant or not: for a call that
 * asks for access to the server rather than using it (servers/createFileAccessRequest). Outside
 * the organization the server is not found, as for every call about a server.
 */
export function requireServerMembership(query: SqlRunner, caller: UserCaller, address: ServerAddress): Promise<ServerAccessRow> {
  return loadServerAccess(query, caller, address, undefined);
}

/**
 * The caller's access to the addressed server, the one way every check on a server reads it: a
 * server outside the caller's organizations, outside an organization key's, or outside the
 * organization the address names is not found. A call's {@link ServerScope} for this server, read
 * with its credential as the call came, serves instead of a read: the call's first check passes it.
 */
async function loadServerAccess(
  query: SqlRunner,
  caller: UserCaller,
  { serverId, organizationId, organizationSlug }: ServerAddress,
  scope: ServerScope | undefined,
): Promise<ServerAccessRow> {
  const row = scope?.serverId === serverId ? scope.access : await findServerAccess(query, caller.user.id, serverId);
  const found =
    row &&
    withinKeyOrganization(caller, String(row.organization.id)) &&
    (organizationId === undefined || organizationId === String(row.organization.id)) &&
    (organizationSlug === undefined || organizationSlug === String(row.organization.slug));
  if (!found) throw fail("not_found", "server not found");
  return row;
}

function mapServerAccess(em: EntityManager, row: ServerAccessRow): ServerAccess {
  const organization = em.map(Organization, row.organization);
  const server = em.map(Server, row.server);
  return { organization, role: row.role, server, rank: row.rank };
}

/** A member's grant, as the rules read it. */
export function grantFacts(row: GrantRow): GrantFacts {
  return {
    actions: row.actions,
    expiresAt: row.expires_at,
    maxUses: row.max_uses,
    durationSeconds: row.duration_seconds,
    filePaths: row.file_paths,
    uses: row.uses,
    firstUsedAt: row.first_used_at,
  };
}

/**
 * Where the caller's file actions reach on a server judged for one of them: everywhere for an
 * owner or admin; for a member, their grant's file_paths (everywhere when it names none).
 * Whether they may read or write files at all was judged already ({@link judgeServerRow}).
 */
export function fileAccessOf(judged: JudgedServer): FilePathAccess {
  if (isManager(judged.row.role)) return everywhereAccess;
  if (!judged.grant) throw fail("permission_denied", "you have no access to this server; ask an owner or admin for a grant");
  return filePathAccess(judged.grant.file_paths);
}

/**
 * Why a file path is out of the caller's reach, or nothing: a file (or a folder changed whole)
 * must be within their file paths; a folder they browse or search may also lead to them. The one
 * rule for the files procedures and the assistant's files tools alike.
 */
export function filePathRefusal(access: FilePathAccess, path: string, folder = false): DomainError | undefined {
  if (folder ? access.reaches(path) : access.allows(path)) return undefined;
  return fail("permission_denied", `your access grant to this server does not reach ${JSON.stringify(path || ".")}; ask an owner or admin for it`);
}

/** The member's grant that allows `use`, or its refusal. */
function allowedGrant(row: ServerAccessRow, use: ServerUse): GrantRow {
  const grant = row.grant?.id ? row.grant : null;
  if (!grant) throw fail("permission_denied", "you have no access to this server; ask an owner or admin for a grant");
  const refusal = grantRefusal(grantFacts(grant), use.action, use.now);
  if (refusal) throw fail("permission_denied", refusal);
  return grant;
}

/** The servers of the organization the caller can see: all for managers, those of their live grants otherwise. */
export async function accessibleServers(db: Db, caller: UserCaller, access: OrganizationAccess, now: Date): Promise<Server[]> {
  const ids = await visibleServerIds(db.query, caller, access, now);
  return db.em.find(Server, { organization: access.organization.id, ...(ids && { id: { $in: ids } }) }, { orderBy: { createdAt: "asc", id: "asc" } });
}

/**
 * The ids of the organization's servers the caller can see, or null for all of them (owners and
 * admins): for filtering what belongs to servers (notes) in SQL without loading the servers.
 */
export async function visibleServerIds(query: SqlRunner, caller: UserCaller, access: OrganizationAccess, now: Date): Promise<string[] | null> {
  if (isManager(access.role)) return null;
  return liveGrantServerIds(query, caller.user.id, access.organization.id, now);
}

/** Platform administration requires the platform admin flag. */
export function requirePlatformAdmin(caller: UserCaller): void {
  if (!caller.user.platformAdmin) throw fail("platform_admin_required", "only a platform admin can do this");
}

/** An organization's limits. A plan no longer in PLANS allows nothing new, so it shows as 0 of each. */
export function planLimits(config: CoreConfig, plan: string): PlanLimits {
  return configuredPlan(config.plans, plan) ?? { servers: 0, gameOAuthClients: 0, notes: 0, assistantQueriesPerDay: 0, assistantToolActionsPerDay: 0, emailsPerHour: 0 };
}

/** What a plan limits by count (the assistant's limits are per day: core/ocelot). */
type CountedResource = "servers" | "gameOAuthClients" | "notes";

/**
 * Within a transaction: locks the organization's row, so concurrent creations are counted one
 * after another, and refuses when the plan allows no more of the resource.
 */
export async function reservePlanCapacity(
  em: EntityManager,
  config: CoreConfig,
  organizationId: string,
  resource: CountedResource,
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
    const what = { servers: "servers", gameOAuthClients: "Game OAuth clients", notes: "notes" }[resource];
    throw fail("plan_limit_reached", `the ${organization.plan} plan allows ${limit} ${what}; this organization has ${used}`);
  }
}
