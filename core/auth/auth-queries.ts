/**
 * The credentials' SQL: sessions, API keys and agent keys looked up by their hash, each joined to
 * whom it belongs to, and their uses recorded. Every call runs one of these, so each is one plain
 * statement (a named prepared statement on a PostgreSQL server).
 */
import type { Query } from "../db/statements.ts";
import { serverAccessSql, type ServerAccessRow } from "../access-queries.ts";

/** A user credential joined to its user. */
export interface CredentialRow {
  id: string;
  expires_at: Date | null;
  revoked_at: Date | null;
  last_used_at: Date | null;
  user_id: string;
  email: string;
  name: string;
  platform_admin: boolean;
}

/** A session is a credential that signed in at `created_at`. */
export interface SessionRow extends CredentialRow {
  created_at: Date;
}

/**
 * With a server's id, a credential's statement also reads the user's access to that server (a
 * {@link ServerAccessRow}, null when there is none), so a call about one server makes one round
 * trip for both (contract/services.ts serverScoped).
 */
export interface WithServerAccess {
  server_access?: ServerAccessRow | null;
}

/** One credential to look up by its hash, with the server whose access to read beside it, if any. */
export interface CredentialLookup {
  hash: string;
  serverId?: string;
}

/**
 * Looks up many credentials of one kind in one statement: `credential` selects one row of the kind
 * for the hash `q.hash` (at most one: the hashes are unique), with its user's id as `user_id`; each
 * lookup gets its row (or undefined) at its own position. The lookups travel as one JSON array, so
 * one statement text serves any number of them on both databases. The row is a LATERAL subquery
 * with a limit, which keeps it a lookup by the hash's unique index per lookup whatever the table's
 * size (a join could be planned as a scan of the whole table).
 */
async function findCredentials<T>(query: Query, credential: string, lookups: readonly CredentialLookup[]): Promise<Array<(T & WithServerAccess) | undefined>> {
  const rows = await query<T & WithServerAccess & { n: number }>(
    `select q.n, c.*, (select row_to_json(a) from (${serverAccessSql("c.user_id", "q.server_id")}) a) as server_access
       from jsonb_to_recordset(?::jsonb) as q(n int, hash text, server_id uuid)
       cross join lateral (${credential} limit 1) c`,
    [JSON.stringify(lookups.map(({ hash, serverId }, n) => ({ n, hash, server_id: serverId ?? null })))],
  );
  const found: Array<(T & WithServerAccess) | undefined> = lookups.map(() => undefined);
  for (const { n, ...row } of rows) found[n] = row as unknown as T & WithServerAccess;
  return found;
}

/** Sessions by their token's hash, each joined to its user. */
export function findSessions(query: Query, lookups: readonly CredentialLookup[]): Promise<Array<(SessionRow & WithServerAccess) | undefined>> {
  return findCredentials<SessionRow>(
    query,
    `select s.id, s.created_at, s.expires_at, null as revoked_at, s.last_used_at, u.id as user_id, u.email, u.name, u.platform_admin
       from sessions s join users u on u.id = s.user_id where s.token_hash = q.hash`,
    lookups,
  );
}

export async function findSession(query: Query, tokenHash: string): Promise<SessionRow | undefined> {
  const [row] = await findSessions(query, [{ hash: tokenHash }]);
  return row;
}

/** An API key is a credential that may be confined to one organization (its id and slug, else null). */
export interface ApiKeyRow extends CredentialRow {
  organization_id: string | null;
  organization_slug: string | null;
}

/** API keys by their secret's hash, each joined to its user and the organization it is confined to. */
export function findApiKeys(query: Query, lookups: readonly CredentialLookup[]): Promise<Array<(ApiKeyRow & WithServerAccess) | undefined>> {
  return findCredentials<ApiKeyRow>(
    query,
    `select k.id, k.expires_at, k.revoked_at, k.last_used_at, u.id as user_id, u.email, u.name, u.platform_admin,
            k.organization_id, ko.slug as organization_slug
       from api_keys k join users u on u.id = k.user_id left join organizations ko on ko.id = k.organization_id
      where k.secret_hash = q.hash`,
    lookups,
  );
}

/** Records a use of the session unless one at or after `staleBefore` is recorded (another request's). */
export async function recordSessionUse(query: Query, id: string, now: Date, staleBefore: Date): Promise<void> {
  await query(`update sessions set last_used_at = ? where id = ? and last_used_at <= ?`, [now, id, staleBefore]);
}

/** Records a use of the API key unless one at or after `staleBefore` is recorded (another request's). */
export async function recordApiKeyUse(query: Query, id: string, now: Date, staleBefore: Date): Promise<void> {
  await query(`update api_keys set last_used_at = ? where id = ? and (last_used_at is null or last_used_at <= ?)`, [now, id, staleBefore]);
}

/** The server holding an agent key, with its organization's slug. */
export interface AgentKeyRow {
  id: string;
  organization_id: string;
  slug: string;
  name: string;
  game: string;
}

export async function findAgentKeyServer(query: Query, keyHash: string): Promise<AgentKeyRow | undefined> {
  const [row] = await query<AgentKeyRow>(
    `select s.id, s.organization_id, o.slug, s.name, s.game
       from servers s join organizations o on o.id = s.organization_id where s.agent_key_hash = ?`,
    [keyHash],
  );
  return row;
}
