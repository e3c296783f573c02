/** The SQL of frozen servers (core/servers/frozen.ts): a server's rank among its organization's servers. */
import type { Query } from "../db/statements.ts";
import { sql, type Sql } from "../db/sql.ts";

/**
 * SQL: the rank of server `alias` among its organization's servers, oldest first by
 * (created_at, id), 1 for the oldest: `row_number() over (partition by organization_id order by
 * created_at, id)`, as one correlated, indexed count, so it fits in any statement about one server.
 */
export const serverRankSql = (alias: string) =>
  `(1 + (select count(*) from servers older where older.organization_id = ${alias}.organization_id
           and (older.created_at, older.id) < (${alias}.created_at, ${alias}.id)))::int`;

/**
 * {@link serverRankSql} as a `sql` fragment, for statements written with the one template: the
 * rank of the server whose row is `alias` (an alias of `servers`). `alias` is a fragment, not a
 * string, so no text from outside reaches the statement: `serverRank(sql\`s\`)`.
 */
export const serverRank = (alias: Sql): Sql =>
  sql`(1 + (select count(*) from servers older where older.organization_id = ${alias}.organization_id
           and (older.created_at, older.id) < (${alias}.created_at, ${alias}.id)))::int`;

/** An organization's servers, oldest first, with their ranks. */
export interface RankedServer {
  id: string;
  name: string;
  rank: number;
}

export function rankedServers(query: Query, organizationId: string): Promise<RankedServer[]> {
  return query<RankedServer>(
    `select id, name, row_number() over (order by created_at, id)::int as rank from servers where organization_id = ? order by rank`,
    [organizationId],
  );
}


/** The server's rank and its organization's plan. */
export async function findServerRank(query: Query, serverId: string): Promise<{ rank: number; plan: string } | undefined> {
  const [row] = await query<{ rank: number; plan: string }>(
    `select ${serverRankSql("s")} as rank, o.plan from servers s join organizations o on o.id = s.organization_id where s.id = ?`,
    [serverId],
  );
  return row;
}

/** Locks the organization's row (in a transaction) and reads its plan. */
export async function lockOrganizationPlan(query: Query, organizationId: string): Promise<string> {
  const [row] = await query<{ plan: string }>(`select plan from organizations where id = ? for update`, [organizationId]);
  return row.plan;
}
