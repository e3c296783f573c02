/**
 * The Game OAuth issuer's SQL: the token engine's statements over its tables (game_oauth_clients,
 * authorization_codes, access_tokens), with the shared checks as fragments, and the hosted sessions as the
 * browser's page opens and reads them. The in-game steps' SQL is in sign-in-queries.ts.
 */
import { sql, type Sql, type SqlRunner } from "../db/sql.ts";
import { arrayOf, bool, int, nullable, row, text, timestamp, type Row } from "../db/rows.ts";
import { exchangeRow, type TokenQueries } from "../oauth/token-queries.ts";
import { clientAuthentication, codeCheckResults } from "../oauth/exchange-checks.ts";
import { serverRank } from "../servers/frozen-queries.ts";

/**
 * Game OAuth's clients as the shared checks read a client (core/oauth/exchange-checks.ts): each
 * authenticates with its secret by either method, and none has to use PKCE.
 */
export const gameClients = sql`(select id, client_id, secret_hash, disabled, 'client_secret_basic_or_post'::text as auth_method, false as require_pkce,
                                        id_token_signed_response_alg
                                   from game_oauth_clients)`;

/** An exchange's row: a consumed code with what the game claims need (the game account, its organization and server). */
const gameExchangeRow = exchangeRow({
  organization_id: text,
  server_id: text,
  sub: text,
  name: text,
  game: text,
  account_uuid: text,
});
export type GameCodeRow = NonNullable<Row<typeof gameExchangeRow>["code"]>;

/** A code presented again, with its client: what its activity event says. */
const gameReusedRow = row({ public_client_id: text, client_name: text, organization_id: text, server_id: text, game_account_id: text });
export type GameReusedRow = Row<typeof gameReusedRow>;

/** The claims' columns of a live access token. */
const gameUserInfoRow = row({ sub: text, name: text, game: text, account_uuid: text, organization_id: text, server_id: text });
export type GameUserInfoRow = Row<typeof gameUserInfoRow>;

/** The statements of core/oauth/token-queries.ts over Game OAuth's tables. */
export const gameTokenQueries: TokenQueries<GameCodeRow, GameReusedRow, GameUserInfoRow> = {
  exchange: (query, p) =>
    query.one(
      sql`with client as (
            select cl.id, cl.secret_hash, cl.auth_method, cl.require_pkce, cl.id_token_signed_response_alg, ${clientAuthentication(p)} as authenticated
              from ${gameClients} cl where cl.client_id = ${p.clientId}
          ), consumed as (
            update authorization_codes set consumed_at = ${p.now}
             where code_hash = ${p.codeHash} and consumed_at is null and ${p.wellFormed}::boolean
               and exists (select 1 from client where authenticated)
            returning id, game_oauth_client_id as client_uuid, redirect_uri, nonce, code_challenge, code_challenge_method, auth_time, expires_at,
                      organization_id, server_id, game_account_id
          ), checked as (
            select c.*, ${codeCheckResults(p)} as checks from consumed c, client cl
          ), issued as (
            insert into access_tokens (id, token_hash, authorization_code_id, game_oauth_client_id, organization_id, game_account_id, server_id, expires_at, created_at)
            select ${p.tokenId}, ${p.tokenHash}, c.id, c.client_uuid, c.organization_id, c.game_account_id, c.server_id, ${p.tokenExpiresAt}, ${p.now}
              from checked c where true = all(c.checks)
          )
          select cl.id as client_row_id, cl.secret_hash as client_secret_hash, cl.authenticated as client_authenticated,
                 cl.id_token_signed_response_alg as client_id_token_alg,
                 (select row_to_json(k) from (select c.id, c.nonce, c.auth_time, c.checks, c.organization_id, c.server_id, a.sub, a.name, a.game, a.account_uuid
                                                from checked c join game_accounts a on a.id = c.game_account_id) k) as code
            from client cl`,
      gameExchangeRow,
    ),
  markReused: (query, now, codeHash) =>
    query.one(
      sql`update authorization_codes c set reused_at = ${now} from game_oauth_clients cl
           where c.code_hash = ${codeHash} and c.reused_at is null and cl.id = c.game_oauth_client_id
          returning cl.client_id as public_client_id, cl.name as client_name, c.organization_id, c.server_id, c.game_account_id`,
      gameReusedRow,
    ),
  userInfo: (query, tokenHash, now) =>
    query.one(
      sql`select a.sub, a.name, a.game, a.account_uuid, t.organization_id, t.server_id
            from access_tokens t
            join game_accounts a on a.id = t.game_account_id
            join authorization_codes c on c.id = t.authorization_code_id
           where t.token_hash = ${tokenHash} and t.revoked_at is null and c.reused_at is null and t.expires_at > ${now}`,
      gameUserInfoRow,
    ),
};

/** An app's registration as an authorization request checks it, with whether its organization is verified. */
const startClientRow = row({
  id: text,
  organization_id: text,
  name: text,
  verifier_policy: text,
  redirect_uris: arrayOf(text),
  disabled: bool,
  verified: bool,
});
export type StartClientRow = Row<typeof startClientRow>;

export function findStartClient(query: SqlRunner, clientId: string): Promise<StartClientRow | undefined> {
  return query.one(
    sql`select c.id, c.organization_id, c.name, c.verifier_policy, c.redirect_uris, c.disabled, o.verified
          from game_oauth_clients c join organizations o on o.id = c.organization_id where c.client_id = ${clientId}`,
    startClientRow,
  );
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
export async function insertHostedSession(query: SqlRunner, s: NewHostedSession): Promise<void> {
  await query.run(
    sql`insert into hosted_authorizations (id, game_oauth_client_id, organization_id, redirect_uri, state, nonce, code_challenge,
          code_challenge_method, browser_binding_check, login_code_hash, login_code_sealed, completion_key, status, expires_at, created_at)
        values (${s.id}, ${s.clientUuid}, ${s.organizationId}, ${s.redirectUri}, ${s.state}, ${s.nonce}, ${s.codeChallenge},
          ${s.codeChallengeMethod}, ${s.bindingCheck}, ${s.loginCodeHash}, ${s.loginCodeSealed}, ${s.completionKey}, 'pending', ${s.expiresAt}, ${s.now})`,
  );
}

/** A pending session that holds this login code past its expiry gives it up. */
export async function expireHeldLoginCode(query: SqlRunner, loginCodeHash: string, now: Date): Promise<void> {
  await query.run(sql`update hosted_authorizations set status = 'expired' where login_code_hash = ${loginCodeHash} and status = 'pending' and expires_at <= ${now}`);
}

/** A hosted session with its client and its claim, as the bound browser's page shows it. */
const hostedSessionRow = row({
  id: text,
  status: text,
  expires_at: timestamp,
  login_code_sealed: text,
  redirect_url_sealed: nullable(text),
  redirect_uri: text,
  client_name: text,
  verifier_policy: text,
  client_id: text,
  /** The claim, if any (it may have run out). */
  claimed_player_name: nullable(text),
  claimed_server_name: nullable(text),
  claimed_until: nullable(timestamp),
});
export type HostedSessionRow = Row<typeof hostedSessionRow>;

/** The session, if it is bound to the browser whose binding check this is. */
export function findHostedSession(query: SqlRunner, sessionId: string, bindingCheck: string): Promise<HostedSessionRow | undefined> {
  return query.one(
    sql`select h.id, h.status, h.expires_at, h.login_code_sealed, h.redirect_url_sealed, h.redirect_uri,
               c.name as client_name, c.verifier_policy, c.id as client_id,
               h.claimed_player_name, s.name as claimed_server_name, h.claimed_until
          from hosted_authorizations h join game_oauth_clients c on c.id = h.game_oauth_client_id
          left join servers s on s.id = h.claimed_server_id
         where h.id = ${sessionId} and h.browser_binding_check = ${bindingCheck}`,
    hostedSessionRow,
  );
}

/** A server a client lets verify its sign-ins, with its presence. */
const verifierServerRow = row({
  id: text,
  name: text,
  game: text,
  online: bool,
  last_seen_at: nullable(timestamp),
  player_auth: nullable(text),
  /** Its rank among its organization's servers and the organization's plan: whether it is frozen (core/servers/frozen.ts). */
  rank: int,
  plan: text,
});
export type VerifierServerRow = Row<typeof verifierServerRow>;

export function verifierServers(query: SqlRunner, clientUuid: string): Promise<VerifierServerRow[]> {
  return query.rows(
    sql`select s.id, s.name, s.game, s.online, s.last_seen_at, s.player_auth, ${serverRank(sql`s`)} as rank, o.plan
          from game_oauth_client_servers cs join servers s on s.id = cs.server_id join organizations o on o.id = s.organization_id
         where cs.game_oauth_client_id = ${clientUuid} order by s.name, s.id`,
    verifierServerRow,
  );
}

/**
 * Deletes Game OAuth's flow rows that expired before `before`: access tokens, and hosted sessions
 * (their codes and those codes' tokens go with them), which the same statement first adds to
 * their client's sign-ins of the day each started (a session deleted by another instance at once
 * is not returned here, so none is counted twice).
 */
export async function deleteExpiredGameFlowRows(query: SqlRunner, before: Date): Promise<void> {
  await query.run(sql`delete from access_tokens where expires_at < ${before}`);
  await query.run(
    sql`with gone as (delete from hosted_authorizations where expires_at < ${before} returning id, game_oauth_client_id, created_at, status)
        insert into game_oauth_client_days as d (game_oauth_client_id, day, started, signed_in, exchanged)
        select game_oauth_client_id, ${utcDay(sql`created_at`)}, count(*), count(*) filter (where status = 'completed'), count(*) filter (where ${exchanged(sql`gone.id`)})
          from gone group by 1, 2
        on conflict (game_oauth_client_id, day) do update
          set started = d.started + excluded.started, signed_in = d.signed_in + excluded.signed_in, exchanged = d.exchanged + excluded.exchanged`,
  );
}

/** The UTC day of a timestamp column. */
const utcDay = (column: Sql) => sql`(${column} at time zone 'UTC')::date`;

/** Whether the hosted session's code was exchanged for tokens. */
const exchanged = (sessionId: Sql) => sql`exists (select 1 from authorization_codes c where c.hosted_authorization_id = ${sessionId} and c.consumed_at is not null)`;

export interface ClientDay {
  day: string;
  started: number;
  signedIn: number;
  exchanged: number;
}

/**
 * A client's sign-ins per UTC day from `first` to `last` (YYYY-MM-DD, both included), by the day
 * each started: the days already counted, plus the sessions not yet deleted. Days without any
 * are left out.
 */
export function clientSignInDays(query: SqlRunner, clientUuid: string, first: string, last: string): Promise<ClientDay[]> {
  return query
    .rows(
      sql`select to_char(day, 'YYYY-MM-DD') as day, sum(started)::int as started, sum(signed_in)::int as signed_in, sum(exchanged)::int as exchanged from (
          select day, started, signed_in, exchanged from game_oauth_client_days
           where game_oauth_client_id = ${clientUuid} and day between ${first}::date and ${last}::date
          union all
          select ${utcDay(sql`h.created_at`)}, 1, (h.status = 'completed')::int, (${exchanged(sql`h.id`)})::int from hosted_authorizations h
           where h.game_oauth_client_id = ${clientUuid} and ${utcDay(sql`h.created_at`)} between ${first}::date and ${last}::date
        ) counted group by day order by day`,
      row({ day: text, started: int, signed_in: int, exchanged: int }),
    )
    .then((rows) => rows.map((r) => ({ day: r.day, started: r.started, signedIn: r.signed_in, exchanged: r.exchanged })));
}
