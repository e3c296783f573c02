/** The SQL of frozen servers (core/servers/frozen.ts): a server's rank among its organization's servers. */
import { sql, type Sql, type SqlRunner } from "../db/sql.ts";
import { int, row, text, type Row } from "../db/rows.ts";

/**
 * The rank of the server whose row is `alias` (an alias of `servers`) among its organization's
 * servers, oldest first by (created_at, id), 1 for the oldest: `row_number() over (partition by
 * organization_id order by created_at, id)`, as one correlated, indexed count, so it fits in any
 * statement about one server. `alias` is a fragment, not a string, so no text from outside
 * reaches the statement: `serverRank(sql\`s\`)`.
 */
export const serverRank = (alias: Sql): Sql =>
  sql`(1 + (select count(*) from servers older where older.organization_id = ${alias}.organization_id
           and (older.created_at, older.id) < (${alias}.created_at, ${alias}.id)))::int`;

const rankedServerRow = row({ id: text, name: text, rank: int });
/** One of an organization's servers, with its rank. */
export type RankedServer = Row<typeof rankedServerRow>;

/** An organization's servers, oldest first, with their ranks. */
export function rankedServers(query: SqlRunner, organizationId: string): Promise<RankedServer[]> {
  return query.rows(
    sql`select id, name, row_number() over (order by created_at, id)::int as rank from servers where organization_id = ${organizationId} order by rank`,
    rankedServerRow,
  );
}

const serverRankRow = row({ rank: int, plan: text });

/** The server's rank and its organization's plan. */
export function findServerRank(query: SqlRunner, serverId: string): Promise<Row<typeof serverRankRow> | undefined> {
  return query.one(
    sql`select ${serverRank(sql`s`)} as rank, o.plan from servers s join organizations o on o.id = s.organization_id where s.id = ${serverId}`,
    serverRankRow,
  );
}

const planRow = row({ plan: text });

/** Locks the organization's row (in a transaction) and reads its plan. */
export async function lockOrganizationPlan(query: SqlRunner, organizationId: string): Promise<string> {
  const [locked] = await query.rows(sql`select plan from organizations where id = ${organizationId} for update`, planRow);
  return locked.plan;
}
