/** The access checks' SQL (core/access.ts). */
import type { Query } from "./db/statements.ts";
import type { Role } from "./roles.ts";
import { serverRankSql } from "./servers/frozen-queries.ts";

/** A grant's row as row_to_json gives it (timestamps as strings). */
export interface GrantRow {
  id: string;
  actions: string[];
  expires_at: string | null;
  max_uses: number | null;
  duration_seconds: number | null;
  uses: number;
  first_used_at: string | null;
}

/** A member's view of a server: their role, their grant to it if any, and both rows as JSON. */
export interface ServerAccessRow {
  role: Role;
  grant: GrantRow | null;
  server: Record<string, unknown>;
  organization: Record<string, unknown>;
  /** The server's rank among its organization's servers, oldest first (whether it is frozen: core/servers/frozen.ts). */
  rank: number;
}

/**
 * The statement of a {@link ServerAccessRow}: the user `userId` as a member of the organization of
 * the server `serverId` (each an SQL expression: a parameter or a column of an enclosing
 * statement). No row when they are not a member or there is no server.
 */
export function serverAccessSql(userId: string, serverId = "?"): string {
  return `select m.role, row_to_json(g) as grant,
            row_to_json(s) as server, row_to_json(o) as organization, ${serverRankSql("s")} as rank
       from servers s
       join organizations o on o.id = s.organization_id
       join memberships m on m.organization_id = s.organization_id and m.user_id = ${userId}
       left join access_grants g on g.server_id = s.id and g.user_id = m.user_id
      where s.id = ${serverId}`;
}

/** The server and its organization, if the user is a member of that organization. */
export async function findServerAccess(query: Query, userId: string, serverId: string): Promise<ServerAccessRow | undefined> {
  const [row] = await query<ServerAccessRow>(serverAccessSql("?"), [userId, serverId]);
  return row;
}

/**
 * A grant still works at the time given twice as parameters: not used up, not past its expiry,
 * not past its duration after first use. The same rule as core/grant-rules.ts `grantState`, for
 * statements that must decide and change in one step.
 */
const liveAt = `(max_uses is null or uses < max_uses)
   and (expires_at is null or expires_at > ?::timestamptz)
   and (duration_seconds is null or first_used_at is null or first_used_at + make_interval(secs => duration_seconds) > ?::timestamptz)`;

/**
 * Spends one use of the grant for `action`, if it is still live and allows the action: one
 * conditional UPDATE, so concurrent calls cannot spend more than max_uses. Returns the grant's
 * uses after it and its max_uses, or undefined when it was not spent.
 */
export async function spendGrantUse(query: Query, grantId: string, action: string, now: Date): Promise<{ uses: number; max_uses: number | null } | undefined> {
  const [row] = await query<{ uses: number; max_uses: number | null }>(
    `update access_grants set uses = uses + 1, first_used_at = coalesce(first_used_at, ?::timestamptz)
      where id = ? and ?::text = any(actions) and ${liveAt}
      returning uses, max_uses`,
    [now, grantId, action, now, now],
  );
  return row;
}

/** Gives one spent use back (a call that then could not act at all); never below zero. */
export async function returnGrantUse(query: Query, grantId: string): Promise<void> {
  await query(`update access_grants set uses = uses - 1 where id = ? and uses > 0`, [grantId]);
}

/** Starts a grant's duration at its first use (viewing), once. */
export async function markGrantFirstUse(query: Query, grantId: string, now: Date): Promise<void> {
  await query(`update access_grants set first_used_at = ? where id = ? and first_used_at is null`, [now, grantId]);
}

/** A grant as it is now, after a spend lost a race. */
export async function findGrant(query: Query, grantId: string): Promise<GrantRow | undefined> {
  const [row] = await query<GrantRow>(`select id, actions, expires_at, max_uses, duration_seconds, uses, first_used_at from access_grants where id = ?`, [grantId]);
  return row;
}

/** The servers of the organization the user holds a live grant to. */
export async function liveGrantServerIds(query: Query, userId: string, organizationId: string, now: Date): Promise<string[]> {
  const rows = await query<{ server_id: string }>(
    `select server_id from access_grants where user_id = ? and organization_id = ? and ${liveAt}`,
    [userId, organizationId, now, now],
  );
  return rows.map((r) => r.server_id);
}

/** The organization's owners' and admins' user ids (who is told of what concerns managers). */
export async function managerIds(query: Query, organizationId: string): Promise<string[]> {
  const rows = await query<{ user_id: string }>(`select user_id from memberships where organization_id = ? and role in ('owner', 'admin')`, [organizationId]);
  return rows.map((row) => row.user_id);
}
