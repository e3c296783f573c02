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

/** The column that reads the access to the server given as the statement's first parameter, for the user `u`. */
function serverAccessColumn(serverId: string | undefined): { sql: string; params: string[] } {
  if (serverId === undefined) return { sql: "", params: [] };
  return { sql: `, (select row_to_json(a) from (${serverAccessSql("u.id")}) a) as server_access`, params: [serverId] };
}

export async function findSession(query: Query, tokenHash: string, serverId?: string): Promise<(SessionRow & WithServerAccess) | undefined> {
  const access = serverAccessColumn(serverId);
  const [row] = await query<SessionRow & WithServerAccess>(
    `select s.id, s.created_at, s.expires_at, null as revoked_at, s.last_used_at, u.id as user_id, u.email, u.name, u.platform_admin${access.sql}
       from sessions s join users u on u.id = s.user_id where s.token_hash = ?`,
    [...access.params, tokenHash],
  );
  return row;
}

/** An API key is a credential that may be confined to one organization (its id and slug, else null). */
export interface ApiKeyRow extends CredentialRow {
  organization_id: string | null;
  organization_slug: string | null;
}

export async function findApiKey(query: Query, secretHash: string, serverId?: string): Promise<(ApiKeyRow & WithServerAccess) | undefined> {
  const access = serverAccessColumn(serverId);
  const [row] = await query<ApiKeyRow & WithServerAccess>(
    `select k.id, k.expires_at, k.revoked_at, k.last_used_at, u.id as user_id, u.email, u.name, u.platform_admin,
            k.organization_id, ko.slug as organization_slug${access.sql}
       from api_keys k join users u on u.id = k.user_id left join organizations ko on ko.id = k.organization_id
      where k.secret_hash = ?`,
    [...access.params, secretHash],
  );
  return row;
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
