/** The access checks' SQL (core/access.ts). */
import { sql, type Sql, type SqlRunner } from "./db/sql.ts";
import { arrayOf, int, nullable, oneOf, record, row, text, timestamp, type Row } from "./db/rows.ts";
import { serverRank } from "./servers/frozen-queries.ts";

const grantColumns = {
  id: text,
  actions: arrayOf(text),
  expires_at: nullable(timestamp),
  max_uses: nullable(int),
  duration_seconds: nullable(int),
  uses: int,
  first_used_at: nullable(timestamp),
  /** Where its file actions reach (core/file-paths.ts); empty: everywhere. */
  file_paths: arrayOf(text),
};
const grantRow = row(grantColumns);

/** A member's grant to a server, as the rules read it. */
export type GrantRow = Row<typeof grantRow>;

/**
 * A member's view of a server: their role, their grant to it if any, and the server's and its
 * organization's rows whole (as `row_to_json` gives them, for the EntityManager to map), with the
 * server's rank among its organization's servers (whether it is frozen: core/servers/frozen.ts).
 */
export const serverAccessRow = row({
  role: oneOf("owner", "admin", "member"),
  grant: nullable(grantRow),
  server: record,
  organization: record,
  rank: int,
});
export type ServerAccessRow = Row<typeof serverAccessRow>;

/**
 * The statement of a {@link ServerAccessRow}: the user `userId` as a member of the organization of
 * the server `serverId` (each a fragment: a parameter, or a column of an enclosing statement). No
 * row when they are not a member or there is no server.
 */
export function serverAccess(userId: Sql, serverId: Sql): Sql {
  return sql`select m.role, row_to_json(g) as grant,
                    row_to_json(s) as server, row_to_json(o) as organization, ${serverRank(sql`s`)} as rank
               from servers s
               join organizations o on o.id = s.organization_id
               join memberships m on m.organization_id = s.organization_id and m.user_id = ${userId}
               left join access_grants g on g.server_id = s.id and g.user_id = m.user_id
              where s.id = ${serverId}`;
}

/** The server and its organization, if the user is a member of that organization. */
export function findServerAccess(query: SqlRunner, userId: string, serverId: string): Promise<ServerAccessRow | undefined> {
  return query.one(serverAccess(sql`${userId}::uuid`, sql`${serverId}::uuid`), serverAccessRow);
}

/**
 * A grant still works at `now`: not used up, not past its expiry, not past its duration after
 * first use. The same rule as core/grant-rules.ts `grantState`, for statements that must decide
 * and change in one step.
 */
const liveAt = (now: Date) => sql`(max_uses is null or uses < max_uses)
   and (expires_at is null or expires_at > ${now}::timestamptz)
   and (duration_seconds is null or first_used_at is null or first_used_at + make_interval(secs => duration_seconds) > ${now}::timestamptz)`;

/**
 * Spends one use of the grant for `action`, if it is still live and allows the action: one
 * conditional UPDATE, so concurrent calls cannot spend more than max_uses. Returns the grant's
 * uses after it and its max_uses, or undefined when it was not spent.
 */
export function spendGrantUse(query: SqlRunner, grantId: string, action: string, now: Date): Promise<{ uses: number; max_uses: number | null } | undefined> {
  return query.one(
    sql`update access_grants set uses = uses + 1, first_used_at = coalesce(first_used_at, ${now}::timestamptz)
         where id = ${grantId} and ${action}::text = any(actions) and ${liveAt(now)}
        returning uses, max_uses`,
    row({ uses: int, max_uses: nullable(int) }),
  );
}

/** Gives one spent use back (a call that then could not act at all); never below zero. */
export async function returnGrantUse(query: SqlRunner, grantId: string): Promise<void> {
  await query.run(sql`update access_grants set uses = uses - 1 where id = ${grantId} and uses > 0`);
}

/** Starts a grant's duration at its first use (viewing), once. */
export async function markGrantFirstUse(query: SqlRunner, grantId: string, now: Date): Promise<void> {
  await query.run(sql`update access_grants set first_used_at = ${now} where id = ${grantId} and first_used_at is null`);
}

/** A grant as it is now, after a spend lost a race. */
export function findGrant(query: SqlRunner, grantId: string): Promise<GrantRow | undefined> {
  return query.one(sql`select id, actions, expires_at, max_uses, duration_seconds, uses, first_used_at, file_paths from access_grants where id = ${grantId}`, grantRow);
}

const serverIdRow = row({ server_id: text });

/** The servers of the organization the user holds a live grant to. */
export async function liveGrantServerIds(query: SqlRunner, userId: string, organizationId: string, now: Date): Promise<string[]> {
  const rows = await query.rows(
    sql`select server_id from access_grants where user_id = ${userId} and organization_id = ${organizationId} and ${liveAt(now)}`,
    serverIdRow,
  );
  return rows.map((r) => r.server_id);
}

const userIdRow = row({ user_id: text });

/** The organization's owners' and admins' user ids (who is told of what concerns managers). */
export async function managerIds(query: SqlRunner, organizationId: string): Promise<string[]> {
  const rows = await query.rows(sql`select user_id from memberships where organization_id = ${organizationId} and role in ('owner', 'admin')`, userIdRow);
  return rows.map((r) => r.user_id);
}
