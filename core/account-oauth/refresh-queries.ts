/**
 * The SQL of Account OAuth's refresh tokens (account_refresh_tokens, migration 0017). A refresh
 * token's family is the authorization code its grant began with: revoking the family marks the
 * code (`account_authorization_codes.revoked_at`), which every access and refresh token of the
 * family is checked against, so one issued concurrently with the revocation dies with it.
 */
import type { Query } from "../db/statements.ts";

/** How a client authenticates, as the statements check it (parameters: secret hash, method). */
const clientAuthenticated = `case when client.auth_method = 'none' then p.method = 'none'
         else p.method <> 'none' and client.secret_hash = p.secret_hash
              and client.auth_method in (p.method, 'client_secret_basic_or_post') end`;

/** Stores the first refresh token of a code's grant, when the client may still have one. */
export async function insertFirstRefreshToken(
  query: Query,
  t: { id: string; tokenHash: string; codeId: string; expiresAt: Date; now: Date },
): Promise<boolean> {
  const rows = await query(
    `insert into account_refresh_tokens (id, token_hash, authorization_code_id, oauth_provider_client_id, user_id, scopes, auth_time, expires_at, created_at)
     select ?, ?, c.id, c.oauth_provider_client_id, c.user_id, c.scopes, c.auth_time, ?, ?
       from account_authorization_codes c join oauth_provider_clients cl on cl.id = c.oauth_provider_client_id
      where c.id = ? and c.scopes @> '["offline_access"]'::jsonb and cl.allowed_scopes @> '["offline_access"]'::jsonb
     returning id`,
    [t.id, t.tokenHash, t.expiresAt, t.now, t.codeId],
  );
  return rows.length > 0;
}

export interface RotateParams {
  clientId: string;
  secretHash: string;
  authMethod: string;
  now: Date;
  tokenHash: string;
  /** The scopes asked for, JSON; "[]" for all of the token's. */
  requested: string;
  /** The new access token's scopes, JSON; null for all of the token's. */
  narrowed: string | null;
  accessId: string;
  accessHash: string;
  accessExpiresAt: Date;
  refreshId: string;
  refreshHash: string;
  refreshExpiresAt: Date;
}

/** What a rotation answers: the client's columns, and the rotated token's grant when it was rotated. */
export interface RotateRow {
  client_row_id: string;
  client_secret_hash: string;
  client_disabled: boolean;
  client_auth_method: string;
  user_id: string | null;
  scopes: string[] | null;
  auth_time: Date | null;
  name: string | null;
  email: string | null;
}

/**
 * One round trip: authenticates the client, marks the presented refresh token used (only when it
 * is unused, unexpired, this client's, within the scopes asked for, its family alive and the client
 * still allowed offline_access), and stores the new access token and the next refresh token. Of any
 * number of concurrent uses of one token exactly one gets its row.
 */
export async function rotateRefreshToken(query: Query, p: RotateParams): Promise<RotateRow | undefined> {
  const [row] = await query<RotateRow>(
    `with client as (
       select id, secret_hash, disabled, token_endpoint_auth_method as auth_method, allowed_scopes from oauth_provider_clients where client_id = ?
     ), authenticated as (
       select client.id from client, (select ?::text as secret_hash, ?::text as method) p
        where not client.disabled and client.allowed_scopes @> '["offline_access"]'::jsonb and ${clientAuthenticated}
     ), rotated as (
       update account_refresh_tokens r set used_at = ?
        where r.token_hash = ? and r.used_at is null and r.oauth_provider_client_id = (select id from authenticated)
          and r.expires_at > ? and r.scopes @> ?::jsonb
          and exists (select 1 from account_authorization_codes c
                       where c.id = r.authorization_code_id and c.revoked_at is null and c.reused_at is null)
       returning r.authorization_code_id, r.oauth_provider_client_id, r.user_id, r.scopes, r.auth_time
     ), access as (
       insert into account_access_tokens (id, token_hash, authorization_code_id, oauth_provider_client_id, user_id, scopes, expires_at, created_at)
       select ?, ?, r.authorization_code_id, r.oauth_provider_client_id, r.user_id, coalesce(?::jsonb, r.scopes), ?, ? from rotated r
       returning id
     ), refreshed as (
       insert into account_refresh_tokens (id, token_hash, authorization_code_id, oauth_provider_client_id, user_id, scopes, auth_time, expires_at, created_at)
       select ?, ?, r.authorization_code_id, r.oauth_provider_client_id, r.user_id, r.scopes, r.auth_time, ?, ? from rotated r
       returning id
     )
     select cl.id as client_row_id, cl.secret_hash as client_secret_hash, cl.disabled as client_disabled, cl.auth_method as client_auth_method,
            r.user_id, r.scopes, r.auth_time, u.name, u.email
       from client cl
       left join rotated r on exists (select 1 from access) and exists (select 1 from refreshed)
       left join users u on u.id = r.user_id`,
    [
      p.clientId, p.secretHash, p.authMethod,
      p.now, p.tokenHash, p.now, p.requested,
      p.accessId, p.accessHash, p.narrowed, p.accessExpiresAt, p.now,
      p.refreshId, p.refreshHash, p.refreshExpiresAt, p.now,
    ],
  );
  return row;
}

/** A refresh token as stored, with its family's state, to name why a rotation failed. */
export interface RefreshTokenRow {
  authorization_code_id: string;
  client_uuid: string;
  public_client_id: string;
  client_name: string;
  user_id: string;
  scopes: string[];
  auth_time: Date;
  expires_at: Date;
  used_at: Date | null;
  created_at: Date;
  family_revoked: boolean;
  client_disabled: boolean;
}

export async function findRefreshToken(query: Query, tokenHash: string): Promise<RefreshTokenRow | undefined> {
  const [row] = await query<RefreshTokenRow>(
    `select r.authorization_code_id, r.oauth_provider_client_id as client_uuid, cl.client_id as public_client_id, cl.name as client_name,
            r.user_id, r.scopes, r.auth_time, r.expires_at, r.used_at, r.created_at,
            (c.revoked_at is not null or c.reused_at is not null) as family_revoked, cl.disabled as client_disabled
       from account_refresh_tokens r
       join account_authorization_codes c on c.id = r.authorization_code_id
       join oauth_provider_clients cl on cl.id = r.oauth_provider_client_id
      where r.token_hash = ?`,
    [tokenHash],
  );
  return row;
}

/**
 * Revokes a family (every access and refresh token of the grant that began with this code); true
 * only for the call that revoked it, so its activity event is written once.
 */
export async function revokeFamily(query: Query, codeId: string, now: Date): Promise<boolean> {
  const rows = await query(`update account_authorization_codes set revoked_at = ? where id = ? and revoked_at is null returning id`, [now, codeId]);
  return rows.length > 0;
}

/** Deletes refresh tokens whose whole family has expired (the newest token expired before `before`). */
export async function deleteExpiredRefreshTokens(query: Query, before: Date): Promise<void> {
  await query(
    `delete from account_refresh_tokens r
      where not exists (select 1 from account_refresh_tokens live where live.authorization_code_id = r.authorization_code_id and live.expires_at >= ?)`,
    [before],
  );
}
