/**
 * The Account OAuth issuer's SQL: the token engine's statements over its tables
 * (oauth_provider_clients, account_authorization_codes, account_access_tokens), written out in full.
 */
import { tokenQueries, type ConsumedCode } from "../oauth/token-queries.ts";

/** A consumed code with what the account claims need: the user and the granted scopes. */
export interface AccountCodeRow extends ConsumedCode {
  user_id: string;
  scopes: string[];
  name: string;
  email: string;
}

/** The statements of core/oauth/token-queries.ts over Account OAuth's tables (parameters in its order). */
export const accountTokenQueries = tokenQueries<AccountCodeRow>({
  exchange: `with client as (
      select id, secret_hash, disabled from oauth_provider_clients where client_id = ?
    ), consumed as (
      update account_authorization_codes set consumed_at = ?
       where code_hash = ? and consumed_at is null and ?::boolean
         and exists (select 1 from client where not disabled and secret_hash = ?)
      returning id, oauth_provider_client_id as client_uuid, redirect_uri, nonce, code_challenge, code_challenge_method, auth_time, expires_at,
                user_id, scopes
    ), issued as (
      insert into account_access_tokens (id, token_hash, authorization_code_id, oauth_provider_client_id, user_id, scopes, expires_at, created_at)
      select ?, ?, c.id, c.client_uuid, c.user_id, c.scopes, ?, ?
        from consumed c
       where c.expires_at > ?
         and c.client_uuid = (select id from client)
         and c.redirect_uri = ?
         and case when c.code_challenge is null then not ?::boolean
                  else c.code_challenge = case when c.code_challenge_method = 'S256' then ?::text else ?::text end end
      returning authorization_code_id
    )
    select cl.id as client_row_id, cl.secret_hash as client_secret_hash, cl.disabled as client_disabled, k.*,
           exists (select 1 from issued) as issued
      from client cl
      left join (select c.*, u.name, u.email from consumed c join users u on u.id = c.user_id) k on true`,
  markReused: `update account_authorization_codes c set reused_at = ? from oauth_provider_clients cl
      where c.code_hash = ? and c.reused_at is null and cl.id = c.oauth_provider_client_id
      returning cl.client_id as public_client_id, cl.name as client_name, c.user_id, c.scopes`,
  userInfo: `select t.user_id, t.scopes, u.name, u.email
      from account_access_tokens t
      join users u on u.id = t.user_id
      join account_authorization_codes c on c.id = t.authorization_code_id
     where t.token_hash = ? and t.revoked_at is null and c.reused_at is null and t.expires_at > ?`,
});
