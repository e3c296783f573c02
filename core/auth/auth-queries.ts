/**
 * The credentials' SQL: sessions, API keys and agent keys looked up by their hash, each joined to
 * whom it belongs to, and their uses recorded. Every call runs one of these, so each is one plain
 * statement (a named prepared statement on a PostgreSQL server).
 */
import { sql, type Sql, type SqlRunner } from "../db/sql.ts";
import { bool, int, nullable, row, text, timestamp, type Decode, type Row } from "../db/rows.ts";
import { serverAccess, serverAccessRow, type ServerAccessRow } from "../access-queries.ts";

/** A user credential joined to its user: what every kind of user credential's lookup returns. */
const credentialColumns = {
  id: text,
  expires_at: nullable(timestamp),
  revoked_at: nullable(timestamp),
  last_used_at: nullable(timestamp),
  user_id: text,
  email: text,
  name: text,
  platform_admin: bool,
};

/** A session is a credential that signed in at `created_at`. */
const sessionRow = row({ ...credentialColumns, created_at: timestamp });
export type SessionRow = Row<typeof sessionRow>;

/** An API key is a credential that may be confined to one organization (its id and slug, else null). */
const apiKeyRow = row({ ...credentialColumns, organization_id: nullable(text), organization_slug: nullable(text) });
export type ApiKeyRow = Row<typeof apiKeyRow>;

/**
 * With a server's id, a credential's statement also reads the user's access to that server (a
 * {@link ServerAccessRow}, null when there is none), so a call about one server makes one round
 * trip for both (contract/services.ts serverScoped).
 */
export interface WithServerAccess {
  server_access: ServerAccessRow | null;
}

/** A looked-up credential's position among the lookups, and the access read beside it. */
const withPosition = row({ n: int, server_access: nullable(serverAccessRow) });

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
async function findCredentials<T>(
  query: SqlRunner,
  credential: Sql,
  decode: Decode<T>,
  lookups: readonly CredentialLookup[],
): Promise<Array<(T & WithServerAccess) | undefined>> {
  const lookupsJson = JSON.stringify(lookups.map(({ hash, serverId }, n) => ({ n, hash, server_id: serverId ?? null })));
  const rows = await query.rows(
    sql`select q.n, c.*, (select row_to_json(a) from (${serverAccess(sql`c.user_id`, sql`q.server_id`)}) a) as server_access
          from jsonb_to_recordset(${lookupsJson}::jsonb) as q(n int, hash text, server_id uuid)
          cross join lateral (${credential} limit 1) c`,
    (value) => {
      const { n, server_access } = withPosition(value);
      return { n, found: { ...decode(value), server_access } };
    },
  );
  const answers: Array<(T & WithServerAccess) | undefined> = lookups.map(() => undefined);
  for (const { n, found } of rows) answers[n] = found;
  return answers;
}

/** Sessions by their token's hash, each joined to its user. */
export function findSessions(query: SqlRunner, lookups: readonly CredentialLookup[]): Promise<Array<(SessionRow & WithServerAccess) | undefined>> {
  return findCredentials(
    query,
    sql`select s.id, s.created_at, s.expires_at, null::timestamptz as revoked_at, s.last_used_at, u.id as user_id, u.email, u.name, u.platform_admin
          from sessions s join users u on u.id = s.user_id where s.token_hash = q.hash`,
    sessionRow,
    lookups,
  );
}

export async function findSession(query: SqlRunner, tokenHash: string): Promise<SessionRow | undefined> {
  const [found] = await findSessions(query, [{ hash: tokenHash }]);
  return found;
}

/** API keys by their secret's hash, each joined to its user and the organization it is confined to. */
export function findApiKeys(query: SqlRunner, lookups: readonly CredentialLookup[]): Promise<Array<(ApiKeyRow & WithServerAccess) | undefined>> {
  return findCredentials(
    query,
    sql`select k.id, k.expires_at, k.revoked_at, k.last_used_at, u.id as user_id, u.email, u.name, u.platform_admin,
               k.organization_id, ko.slug as organization_slug
          from api_keys k join users u on u.id = k.user_id left join organizations ko on ko.id = k.organization_id
         where k.secret_hash = q.hash`,
    apiKeyRow,
    lookups,
  );
}

/** Records a use of the session unless one at or after `staleBefore` is recorded (another request's). */
export async function recordSessionUse(query: SqlRunner, id: string, now: Date, staleBefore: Date): Promise<void> {
  await query.run(sql`update sessions set last_used_at = ${now} where id = ${id} and last_used_at <= ${staleBefore}`);
}

/** Records a use of the API key unless one at or after `staleBefore` is recorded (another request's). */
export async function recordApiKeyUse(query: SqlRunner, id: string, now: Date, staleBefore: Date): Promise<void> {
  await query.run(sql`update api_keys set last_used_at = ${now} where id = ${id} and (last_used_at is null or last_used_at <= ${staleBefore})`);
}

/** The server holding an agent key, with its organization's slug. */
const agentKeyRow = row({ id: text, organization_id: text, slug: text, name: text, game: text });
export type AgentKeyRow = Row<typeof agentKeyRow>;

export function findAgentKeyServer(query: SqlRunner, keyHash: string): Promise<AgentKeyRow | undefined> {
  return query.one(
    sql`select s.id, s.organization_id, o.slug, s.name, s.game
          from servers s join organizations o on o.id = s.organization_id where s.agent_key_hash = ${keyHash}`,
    agentKeyRow,
  );
}
