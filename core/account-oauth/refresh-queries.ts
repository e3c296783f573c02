/**
 * The SQL of Account OAuth's refresh tokens (account_refresh_tokens, migration 0017). A refresh
 * token's family is the authorization code its grant began with: revoking the family marks the
 * code (`account_authorization_codes.revoked_at`), which every access and refresh token of the
 * family is checked against, so one issued concurrently with the revocation dies with it.
 */
import { sql, type SqlRunner } from "../db/sql.ts";
import { arrayOf, bool, nullable, oneOf, row, text, timestamp, type Row } from "../db/rows.ts";
import { signingAlgs } from "../../contract/issuers.ts";
import { clientAuthentication, type PresentedClient } from "../oauth/exchange-checks.ts";
import { refreshCheckResults, type RefreshCheckParams } from "./refresh-checks.ts";

/** Stores the first refresh token of a code's grant, when the client may still have one. */
export async function insertFirstRefreshToken(query: SqlRunner, t: { id: string; tokenHash: string; codeId: string; expiresAt: Date; now: Date }): Promise<boolean> {
  const stored = await query.run(
    sql`insert into account_refresh_tokens (id, token_hash, authorization_code_id, oauth_provider_client_id, user_id, scopes, auth_time, expires_at, created_at)
        select ${t.id}, ${t.tokenHash}, c.id, c.oauth_provider_client_id, c.user_id, c.scopes, c.auth_time, ${t.expiresAt}, ${t.now}
          from account_authorization_codes c join oauth_provider_clients cl on cl.id = c.oauth_provider_client_id
         where c.id = ${t.codeId} and c.scopes @> '["offline_access"]'::jsonb and cl.allowed_scopes @> '["offline_access"]'::jsonb`,
  );
  return stored > 0;
}

export interface RotateParams extends PresentedClient, RefreshCheckParams {
  clientId: string;
  tokenHash: string;
  /** The new access token's scopes, JSON; null for all of the token's. */
  narrowed: string | null;
  accessId: string;
  accessHash: string;
  accessExpiresAt: Date;
  refreshId: string;
  refreshHash: string;
  refreshExpiresAt: Date;
}

/**
 * What a rotation answers: the client's columns (no row when no client has the client_id), and the
 * presented token when the client authenticated and the token exists: its grant, its checks'
 * results (refresh-checks.ts), whether its family lives, and whether this call rotated it.
 */
const rotateRow = row({
  client_row_id: text,
  client_secret_hash: text,
  /** `clientAuthentication` (core/oauth/exchange-checks.ts) held. */
  client_authenticated: bool,
  /** How the client's ID tokens are signed. */
  client_id_token_alg: oneOf(...signingAlgs),
  token: nullable(
    row({
      authorization_code_id: text,
      public_client_id: text,
      client_name: text,
      user_id: text,
      scopes: arrayOf(text),
      auth_time: timestamp,
      name: text,
      email: text,
      email_verified: bool,
      checks: arrayOf(bool),
      family_alive: bool,
      rotated: bool,
    }),
  ),
});
export type RotateRow = Row<typeof rotateRow>;

/**
 * One round trip: authenticates the client, computes the checks of the presented refresh token
 * (refresh-checks.ts), and only where all hold marks it used and stores the new access token and
 * the next refresh token. Of any number of concurrent uses of one token exactly one rotates it
 * (the update takes it only while it is unused).
 */
export function rotateRefreshToken(query: SqlRunner, p: RotateParams): Promise<RotateRow | undefined> {
  return query.one(
    sql`with client as (
          select cl.id, cl.secret_hash, cl.allowed_scopes, cl.id_token_signed_response_alg, ${clientAuthentication(p)} as authenticated
            from (select id, secret_hash, disabled, token_endpoint_auth_method as auth_method, allowed_scopes, id_token_signed_response_alg
                    from oauth_provider_clients where client_id = ${p.clientId}) cl
        ), presented as (
          select r.*, ${refreshCheckResults(p)} as checks
            from (select t.id, t.authorization_code_id, t.oauth_provider_client_id, t.user_id, t.scopes, t.auth_time, t.expires_at, t.used_at,
                         (c.revoked_at is null and c.reused_at is null) as family_alive
                    from account_refresh_tokens t join account_authorization_codes c on c.id = t.authorization_code_id
                   where t.token_hash = ${p.tokenHash}) r, client cl
           where cl.authenticated
        ), rotated as (
          update account_refresh_tokens t set used_at = ${p.now}
            from presented r
           where t.id = r.id and t.used_at is null and true = all(r.checks)
          returning t.authorization_code_id, t.oauth_provider_client_id, t.user_id, t.scopes, t.auth_time
        ), access as (
          insert into account_access_tokens (id, token_hash, authorization_code_id, oauth_provider_client_id, user_id, scopes, expires_at, created_at)
          select ${p.accessId}, ${p.accessHash}, r.authorization_code_id, r.oauth_provider_client_id, r.user_id, coalesce(${p.narrowed}::jsonb, r.scopes),
                 ${p.accessExpiresAt}, ${p.now}
            from rotated r
        ), refreshed as (
          insert into account_refresh_tokens (id, token_hash, authorization_code_id, oauth_provider_client_id, user_id, scopes, auth_time, expires_at, created_at)
          select ${p.refreshId}, ${p.refreshHash}, r.authorization_code_id, r.oauth_provider_client_id, r.user_id, r.scopes, r.auth_time,
                 ${p.refreshExpiresAt}, ${p.now}
            from rotated r
        )
        select cl.id as client_row_id, cl.secret_hash as client_secret_hash, cl.authenticated as client_authenticated,
               cl.id_token_signed_response_alg as client_id_token_alg,
               (select row_to_json(k) from (
                  select r.authorization_code_id, pc.client_id as public_client_id, pc.name as client_name, r.user_id, r.scopes, r.auth_time,
                         u.name, u.email, u.email_verified_at is not null as email_verified, r.checks, r.family_alive, exists (select 1 from rotated) as rotated
                    from presented r
                    join oauth_provider_clients pc on pc.id = r.oauth_provider_client_id
                    join users u on u.id = r.user_id) k) as token
          from client cl`,
    rotateRow,
  );
}

/** A refresh token as stored, with its family's state, to name why a rotation failed. */
const refreshTokenRow = row({
  authorization_code_id: text,
  client_uuid: text,
  public_client_id: text,
  client_name: text,
  user_id: text,
  scopes: arrayOf(text),
  auth_time: timestamp,
  expires_at: timestamp,
  used_at: nullable(timestamp),
  created_at: timestamp,
  family_revoked: bool,
  client_disabled: bool,
});
export type RefreshTokenRow = Row<typeof refreshTokenRow>;

export function findRefreshToken(query: SqlRunner, tokenHash: string): Promise<RefreshTokenRow | undefined> {
  return query.one(
    sql`select r.authorization_code_id, r.oauth_provider_client_id as client_uuid, cl.client_id as public_client_id, cl.name as client_name,
               r.user_id, r.scopes, r.auth_time, r.expires_at, r.used_at, r.created_at,
               (c.revoked_at is not null or c.reused_at is not null) as family_revoked, cl.disabled as client_disabled
          from account_refresh_tokens r
          join account_authorization_codes c on c.id = r.authorization_code_id
          join oauth_provider_clients cl on cl.id = r.oauth_provider_client_id
         where r.token_hash = ${tokenHash}`,
    refreshTokenRow,
  );
}

/**
 * Revokes a family (every access and refresh token of the grant that began with this code); true
 * only for the call that revoked it, so its activity event is written once.
 */
export async function revokeFamily(query: SqlRunner, codeId: string, now: Date): Promise<boolean> {
  return (await query.run(sql`update account_authorization_codes set revoked_at = ${now} where id = ${codeId} and revoked_at is null`)) > 0;
}

/** Deletes refresh tokens whose whole family has expired (the newest token expired before `before`). */
export async function deleteExpiredRefreshTokens(query: SqlRunner, before: Date): Promise<void> {
  await query.run(
    sql`delete from account_refresh_tokens r
         where not exists (select 1 from account_refresh_tokens live where live.authorization_code_id = r.authorization_code_id and live.expires_at >= ${before})`,
  );
}
