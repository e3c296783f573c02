/** The access checks' SQL (core/access.ts). */
import type { Query } from "./db/statements.ts";
import type { Role } from "./roles.ts";
import { serverRankSql } from "./servers/frozen-queries.ts";

/** A member's view of a server: their role, whether they hold a grant to it, and both rows as JSON. */
export interface ServerAccessRow {
  role: Role;
  granted: boolean;
  server: Record<string, unknown>;
  organization: Record<string, unknown>;
  /** The server's rank among its organization's servers, oldest first (whether it is frozen: core/servers/frozen.ts). */
  rank: number;
}

/** The server and its organization, if the user is a member of that organization. */
export async function findServerAccess(query: Query, userId: string, serverId: string): Promise<ServerAccessRow | undefined> {
  const [row] = await query<ServerAccessRow>(
    `select m.role, exists (select 1 from access_grants g where g.server_id = s.id and g.user_id = m.user_id) as granted,
            row_to_json(s) as server, row_to_json(o) as organization, ${serverRankSql("s")} as rank
       from servers s
       join organizations o on o.id = s.organization_id
       join memberships m on m.organization_id = s.organization_id and m.user_id = ?
      where s.id = ?`,
    [userId, serverId],
  );
  return row;
}
