/**
 * Frozen servers: when an organization has more servers than its plan allows, the newest ones
 * beyond the limit are frozen. A frozen server stays listed, viewable, editable and deletable, but
 * its agent is refused (and a connected one sent away), no player signs in on it, and its console
 * refuses commands. Raising the plan or deleting servers unfreezes the oldest frozen ones first.
 *
 * Nothing about it is stored: a server's rank among its organization's servers, oldest first by
 * (created_at, id), is read from the database with the server (serverRank, frozen-queries.ts),
 * and the plan's limit comes from the running configuration, so "frozen" is never stale, even
 * when PLANS changed between restarts. A plan no longer in PLANS freezes nothing: it lets the
 * organization add nothing (reservePlanCapacity), but switching off every server of every
 * organization on a retired plan would punish them for the operator's bookkeeping; a platform
 * admin moves such an organization to a plan, whose limit then applies.
 */
import type { EntityManager } from "@mikro-orm/postgresql";
import { configuredPlan } from "../plans.ts";
import { recordActivity } from "../activity/record.ts";
import type { UserCaller } from "../context.ts";
import type { SqlRunner } from "../db/sql.ts";
import type { CoreConfig } from "../deps.ts";
import { DomainError } from "../errors.ts";
import { findServerRank, rankedServers, type RankedServer } from "./frozen-queries.ts";

export type { RankedServer } from "./frozen-queries.ts";

type Plans = Pick<CoreConfig, "plans">;

/** Why a server is frozen: its organization's plan allows `limit` servers. */
export interface Freeze {
  limit: number;
}

/** Whether the server of this rank is frozen under the organization's plan; undefined when it is not. */
export function freezeOf(config: Plans, plan: string, rank: number): Freeze | undefined {
  const limit = configuredPlan(config.plans, plan)?.servers;
  return limit !== undefined && rank > limit ? { limit } : undefined;
}

const allows = (limit: number) => `the organization's plan allows ${limit} server${limit === 1 ? "" : "s"}`;

/** The freeze of the server an access check found (core/access.ts requireServer). */
export function accessFreeze(config: Plans, access: { organization: { plan: string }; rank: number }): Freeze | undefined {
  return freezeOf(config, access.organization.plan, access.rank);
}

/** What the dashboard and the API say of a frozen server. */
export function frozenReason(freeze: Freeze): string {
  return `this server is frozen: ${allows(freeze.limit)}; raise the plan or delete servers to unfreeze it`;
}

/** What a player reads in game on a frozen server. */
export function frozenInGame(freeze: Freeze): string {
  return `This server is frozen: ${allows(freeze.limit)}, so it cannot sign you in. (Server owner: raise the plan or delete servers in Outpost.)`;
}

/** The refusal of what a frozen server cannot do (its agent, its console). */
export function frozenError(freeze: Freeze): DomainError {
  return new DomainError("server_frozen", frozenReason(freeze));
}

/** Refuses with {@link frozenError} when the server is frozen. */
export function requireNotFrozen(freeze: Freeze | undefined): void {
  if (freeze) throw frozenError(freeze);
}

/** The server's freeze now, read with its organization's plan; undefined when it is not frozen (or is gone). */
export async function serverFreeze(query: SqlRunner, config: Plans, serverId: string): Promise<Freeze | undefined> {
  const row = await findServerRank(query, serverId);
  return row && freezeOf(config, row.plan, row.rank);
}

/** An organization's servers with those frozen under a plan. */
export interface FrozenSet {
  servers: RankedServer[];
  frozen: Map<string, Freeze>;
}

/** The organization's servers and which of them `plan` freezes (servers already read may be given). */
export async function frozenSet(query: SqlRunner, config: Plans, organizationId: string, plan: string, servers?: RankedServer[]): Promise<FrozenSet> {
  const ranked = servers ?? (await rankedServers(query, organizationId));
  const frozen = new Map<string, Freeze>();
  for (const s of ranked) {
    const freeze = freezeOf(config, plan, s.rank);
    if (freeze) frozen.set(s.id, freeze);
  }
  return { servers: ranked, frozen };
}

/** The servers a change froze and unfroze. */
export interface FreezeChange {
  frozen: RankedServer[];
  unfrozen: RankedServer[];
}

/**
 * Compares the organization's frozen servers before and after a change made in the same
 * transaction with the organization's row locked (a plan change, a deletion), and records
 * `server.frozen` and `server.unfrozen` for each server still there whose state changed, with the
 * plan and its server limit after the change.
 */
export function recordFreezeChange(
  tx: EntityManager,
  caller: UserCaller,
  organization: { id: string; plan: string },
  config: Plans,
  before: FrozenSet,
  after: FrozenSet,
): FreezeChange {
  const change: FreezeChange = { frozen: [], unfrozen: [] };
  for (const s of after.servers) {
    const was = before.frozen.has(s.id);
    const is = after.frozen.has(s.id);
    if (is && !was) change.frozen.push(s);
    if (was && !is) change.unfrozen.push(s);
  }
  const limit = configuredPlan(config.plans, organization.plan)?.servers;
  const details = (s: RankedServer) => ({ name: s.name, plan: organization.plan, ...(limit !== undefined && { serverLimit: String(limit) }) });
  const record = (s: RankedServer, action: "server.frozen" | "server.unfrozen") =>
    recordActivity(tx, caller, { organizationId: organization.id, action, targetType: "server", targetId: s.id, serverId: s.id, details: details(s) });
  for (const s of change.frozen) record(s, "server.frozen");
  for (const s of change.unfrozen) record(s, "server.unfrozen");
  return change;
}
