/**
 * The Game OAuth issuer's SQL: the token engine's statements over its tables (game_oauth_clients,
 * authorization_codes, access_tokens), written out in full, and the hosted sessions as the
 * browser's page opens and reads them. The in-game steps' SQL is in sign-in-queries.ts.
 */
import type { Query } from "../db/statements.ts";
import { tokenQueries, type ConsumedCode } from "../oauth/token-queries.ts";
import { serverRankSql } from "../servers/frozen-queries.ts";

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
         and exists (select 1 from client where not disabled and secret_hash = ? and ?::text <> 'none')
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

/** An app's registration as an authorization request checks it, with whether its organization is verified. */
export interface StartClientRow {
  id: string;
  organization_id: string;
  name: string;
  verifier_policy: string;
  redirect_uris: string[];
  disabled: boolean;
  verified: boolean;
}

export async function findStartClient(query: Query, clientId: string): Promise<StartClientRow | undefined> {
  const [row] = await query<StartClientRow>(
    `select c.id, c.organization_id, c.name, c.verifier_policy, c.redirect_uris, c.disabled, o.verified
       from game_oauth_clients c join organizations o on o.id = c.organization_id where c.client_id = ?`,
    [clientId],
  );
  return row;
}

/** A pending hosted session as stored: the browser's copies sealed, its binding and login code hashed. */
export interface NewHostedSession {
  id: string;
  clientUuid: string;
  organizationId: string;
  redirectUri: string;
  state: string;
  nonce: string | null;
  codeChallenge: string | null;
  codeChallengeMethod: string | null;
  bindingCheck: string;
  loginCodeHash: string;
  loginCodeSealed: string;
  completionKey: string;
  expiresAt: Date;
  now: Date;
}

/** Fails with a unique violation when a pending session holds the same login code. */
export async function insertHostedSession(query: Query, s: NewHostedSession): Promise<void> {
  await query(
    `insert into hosted_authorizations (id, game_oauth_client_id, organization_id, redirect_uri, state, nonce, code_challenge,
       code_challenge_method, browser_binding_check, login_code_hash, login_code_sealed, completion_key, status, expires_at, created_at)
     values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?)`,
    [
      s.id, s.clientUuid, s.organizationId, s.redirectUri, s.state, s.nonce, s.codeChallenge, s.codeChallengeMethod,
      s.bindingCheck, s.loginCodeHash, s.loginCodeSealed, s.completionKey, s.expiresAt, s.now,
    ],
  );
}

/** A pending session that holds this login code past its expiry gives it up. */
export async function expireHeldLoginCode(query: Query, loginCodeHash: string, now: Date): Promise<void> {
  await query(`update hosted_authorizations set status = 'expired' where login_code_hash = ? and status = 'pending' and expires_at <= ?`, [loginCodeHash, now]);
}

/** A hosted session with its client and its claim, as the bound browser's page shows it. */
export interface HostedSessionRow {
  id: string;
  status: string;
  expires_at: Date;
  login_code_sealed: string;
  redirect_url_sealed: string | null;
  redirect_uri: string;
  client_name: string;
  verifier_policy: string;
  client_id: string;
  /** The claim, if any (it may have run out). */
  claimed_player_name: string | null;
  claimed_server_name: string | null;
  claimed_until: Date | null;
}

/** The session, if it is bound to the browser whose binding check this is. */
export async function findHostedSession(query: Query, sessionId: string, bindingCheck: string): Promise<HostedSessionRow | undefined> {
  const [row] = await query<HostedSessionRow>(
    `select h.id, h.status, h.expires_at, h.login_code_sealed, h.redirect_url_sealed, h.redirect_uri,
            c.name as client_name, c.verifier_policy, c.id as client_id,
            h.claimed_player_name, s.name as claimed_server_name, h.claimed_until
       from hosted_authorizations h join game_oauth_clients c on c.id = h.game_oauth_client_id
       left join servers s on s.id = h.claimed_server_id
      where h.id = ? and h.browser_binding_check = ?`,
    [sessionId, bindingCheck],
  );
  return row;
}

/** A server a client lets verify its sign-ins, with its presence. */
export interface VerifierServerRow {
  id: string;
  name: string;
  game: string;
  online: boolean;
  last_seen_at: Date | null;
  player_auth: string | null;
  /** Its rank among its organization's servers and the organization's plan: whether it is frozen (core/servers/frozen.ts). */
  rank: number;
  plan: string;
}

export function verifierServers(query: Query, clientUuid: string): Promise<VerifierServerRow[]> {
  return query<VerifierServerRow>(
    `select s.id, s.name, s.game, s.online, s.last_seen_at, s.player_auth, ${serverRankSql("s")} as rank, o.plan
       from game_oauth_client_servers cs join servers s on s.id = cs.server_id join organizations o on o.id = s.organization_id
      where cs.game_oauth_client_id = ? order by s.name, s.id`,
    [clientUuid],
  );
}

/** Deletes Game OAuth's flow rows that expired before `before`: access tokens, and hosted sessions (their codes and those codes' tokens go with them). */
export async function deleteExpiredGameFlowRows(query: Query, before: Date): Promise<void> {
  await query(`delete from access_tokens where expires_at < ?`, [before]);
  await query(`delete from hosted_authorizations where expires_at < ?`, [before]);
}
