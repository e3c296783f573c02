/**
 * The Game OAuth issuer's SQL: the token engine's statements over its tables (game_oauth_clients,
 * authorization_codes, access_tokens), written out in full.
 */
import { tokenQueries, type ConsumedCode } from "../oauth/token-queries.ts";

/** A consumed code with what the game claims need: the game account, its organization and server. */
export interface GameCodeRow extends ConsumedCode {
  organization_id: string;
  server_id: string;
  game_account_id: string;
  sub: string;
  name: string;
  game: string;
  account_uuid: string;
}

/** The statements of core/oauth/token-queries.ts over Game OAuth's tables (parameters in its order). */
export const gameTokenQueries = tokenQueries<GameCodeRow>({
  exchange: `with client as (
      select id, secret_hash, disabled from game_oauth_clients where client_id = ?
    ), consumed as (
      update authorization_codes set consumed_at = ?
       where code_hash = ? and consumed_at is null and ?::boolean
         and exists (select 1 from client where not disabled and secret_hash = ?)
      returning id, game_oauth_client_id as client_uuid, redirect_uri, nonce, code_challenge, code_challenge_method, auth_time, expires_at,
                organization_id, server_id, game_account_id
    ), issued as (
      insert into access_tokens (id, token_hash, authorization_code_id, game_oauth_client_id, organization_id, game_account_id, server_id, expires_at, created_at)
      select ?, ?, c.id, c.client_uuid, c.organization_id, c.game_account_id, c.server_id, ?, ?
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
      left join (select c.*, a.sub, a.name, a.game, a.account_uuid from consumed c join game_accounts a on a.id = c.game_account_id) k on true`,
  markReused: `update authorization_codes c set reused_at = ? from game_oauth_clients cl
      where c.code_hash = ? and c.reused_at is null and cl.id = c.game_oauth_client_id
      returning cl.client_id as public_client_id, cl.name as client_name, c.organization_id, c.server_id, c.game_account_id`,
  userInfo: `select a.sub, a.name, a.game, a.account_uuid, t.organization_id, t.server_id
      from access_tokens t
      join game_accounts a on a.id = t.game_account_id
      join authorization_codes c on c.id = t.authorization_code_id
     where t.token_hash = ? and t.revoked_at is null and c.reused_at is null and t.expires_at > ?`,
});
