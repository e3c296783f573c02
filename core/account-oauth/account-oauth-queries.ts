/**
 * The Account OAuth issuer's SQL: the token engine's statements over its tables
 * (oauth_provider_clients, account_authorization_codes, account_access_tokens), with the shared checks as fragments,
 * and the authorization requests, consents and codes of the steps before the token endpoint.
 */
import { randomUUID } from "node:crypto";
import { empty, sql, type SqlRunner } from "../db/sql.ts";
import { arrayOf, bool, int, nullable, row, text, timestamp, type Row } from "../db/rows.ts";
import { exchangeRow, type TokenQueries } from "../oauth/token-queries.ts";
import { clientAuthentication, codeCheckResults } from "../oauth/exchange-checks.ts";
import { deleteExpiredRefreshTokens } from "./refresh-queries.ts";

/**
 * Account OAuth's clients as the shared checks read a client (core/oauth/exchange-checks.ts): its
 * registered token_endpoint_auth_method, and whether it must use PKCE.
 */
export const accountClients = sql`(select id, client_id, name, secret_hash, disabled, token_endpoint_auth_method as auth_method, require_pkce, allowed_scopes,
                                           id_token_signed_response_alg
                                      from oauth_provider_clients)`;

/** An exchange's row: a consumed code with what the account claims need (the user and the granted scopes). */
const accountExchangeRow = exchangeRow({ user_id: text, scopes: arrayOf(text), name: text, email: text, email_verified: bool });
export type AccountCodeRow = NonNullable<Row<typeof accountExchangeRow>["code"]>;

/** A code presented again, with its client: what its activity event says. */
const accountReusedRow = row({ public_client_id: text, client_name: text, user_id: text, scopes: arrayOf(text) });
export type AccountReusedRow = Row<typeof accountReusedRow>;

/** The claims' columns of a live access token. */
const accountUserInfoRow = row({ user_id: text, scopes: arrayOf(text), name: text, email: text, email_verified: bool });
export type AccountUserInfoRow = Row<typeof accountUserInfoRow>;

/** The statements of core/oauth/token-queries.ts over Account OAuth's tables. */
export const accountTokenQueries: TokenQueries<AccountCodeRow, AccountReusedRow, AccountUserInfoRow> = {
  exchange: (query, p) =>
    query.one(
      sql`with client as (
            select cl.id, cl.secret_hash, cl.auth_method, cl.require_pkce, cl.id_token_signed_response_alg, ${clientAuthentication(p)} as authenticated
              from ${accountClients} cl where cl.client_id = ${p.clientId}
          ), consumed as (
            update account_authorization_codes set consumed_at = ${p.now}
             where code_hash = ${p.codeHash} and consumed_at is null and ${p.wellFormed}::boolean
               and exists (select 1 from client where authenticated)
            returning id, oauth_provider_client_id as client_uuid, redirect_uri, nonce, code_challenge, code_challenge_method, auth_time, expires_at,
                      user_id, scopes
          ), checked as (
            select c.*, ${codeCheckResults(p)} as checks from consumed c, client cl
          ), issued as (
            insert into account_access_tokens (id, token_hash, authorization_code_id, oauth_provider_client_id, user_id, scopes, expires_at, created_at)
            select ${p.tokenId}, ${p.tokenHash}, c.id, c.client_uuid, c.user_id, c.scopes, ${p.tokenExpiresAt}, ${p.now}
              from checked c where true = all(c.checks)
          )
          select cl.id as client_row_id, cl.secret_hash as client_secret_hash, cl.authenticated as client_authenticated,
                 cl.id_token_signed_response_alg as client_id_token_alg,
                 (select row_to_json(k) from (select c.id, c.nonce, c.auth_time, c.checks, c.user_id, c.scopes, u.name, u.email, u.email_verified_at is not null as email_verified
                                                from checked c join users u on u.id = c.user_id) k) as code
            from client cl`,
      accountExchangeRow,
    ),
  markReused: (query, now, codeHash) =>
    query.one(
      sql`update account_authorization_codes c set reused_at = ${now} from oauth_provider_clients cl
           where c.code_hash = ${codeHash} and c.reused_at is null and cl.id = c.oauth_provider_client_id
          returning cl.client_id as public_client_id, cl.name as client_name, c.user_id, c.scopes`,
      accountReusedRow,
    ),
  userInfo: (query, tokenHash, now) =>
    query.one(
      sql`select t.user_id, t.scopes, u.name, u.email, u.email_verified_at is not null as email_verified
            from account_access_tokens t
            join users u on u.id = t.user_id
            join account_authorization_codes c on c.id = t.authorization_code_id
            join oauth_provider_clients cl on cl.id = t.oauth_provider_client_id
           where t.token_hash = ${tokenHash} and t.revoked_at is null and c.reused_at is null and c.revoked_at is null and not cl.disabled
             and t.expires_at > ${now}`,
      accountUserInfoRow,
    ),
};

/** An app's registration, as an authorization request checks it. */
const clientRow = row({
  id: text,
  name: text,
  redirect_uris: arrayOf(text),
  skip_consent: bool,
  disabled: bool,
  allowed_scopes: arrayOf(text),
  token_endpoint_auth_method: text,
  require_pkce: bool,
});
export type ClientRow = Row<typeof clientRow>;

export function findClient(query: SqlRunner, clientId: string): Promise<ClientRow | undefined> {
  return query.one(
    sql`select id, name, redirect_uris, skip_consent, disabled, allowed_scopes, token_endpoint_auth_method, require_pkce
          from oauth_provider_clients where client_id = ${clientId}`,
    clientRow,
  );
}

const logoutClientRow = row({ post_logout_redirect_uris: arrayOf(text), disabled: bool });

/** Where an app's RP-initiated logout may return the browser. */
export function findLogoutClient(query: SqlRunner, clientId: string): Promise<Row<typeof logoutClientRow> | undefined> {
  return query.one(sql`select post_logout_redirect_uris, disabled from oauth_provider_clients where client_id = ${clientId}`, logoutClientRow);
}

/** A stored authorization request with its client's columns. */
const requestRow = row({
  id: text,
  client_uuid: text,
  public_client_id: text,
  client_name: text,
  skip_consent: bool,
  disabled: bool,
  redirect_uri: text,
  state: text,
  scopes: arrayOf(text),
  nonce: nullable(text),
  code_challenge: nullable(text),
  code_challenge_method: nullable(text),
  prompt_login: bool,
  prompt_consent: bool,
  prompt_none: bool,
  max_age: nullable(int),
  user_id: nullable(text),
  status: text,
  expires_at: timestamp,
  created_at: timestamp,
});
export type RequestRow = Row<typeof requestRow>;

export async function insertRequest(query: SqlRunner, row: RequestRow, requestHash: string): Promise<void> {
  await query.run(
    sql`insert into account_authorization_requests (id, request_hash, oauth_provider_client_id, redirect_uri, state, scopes, nonce,
          code_challenge, code_challenge_method, prompt_login, prompt_consent, prompt_none, max_age, status, expires_at, created_at)
        values (${row.id}, ${requestHash}, ${row.client_uuid}, ${row.redirect_uri}, ${row.state}, ${JSON.stringify(row.scopes)}, ${row.nonce},
          ${row.code_challenge}, ${row.code_challenge_method}, ${row.prompt_login}, ${row.prompt_consent}, ${row.prompt_none},
          ${row.max_age}, ${row.status}, ${row.expires_at}, ${row.created_at})`,
  );
}

/** The request named by this hash, whatever its status. */
export function findRequest(query: SqlRunner, requestHash: string): Promise<RequestRow | undefined> {
  return query.one(
    // Columns named, not r.*: a prepared statement's result must keep its shape when a later
    // migration adds a column while older instances still serve (a rolling upgrade).
    sql`select r.id, r.redirect_uri, r.state, r.scopes, r.nonce, r.code_challenge, r.code_challenge_method, r.prompt_login, r.prompt_consent,
               r.prompt_none, r.max_age, r.user_id, r.status, r.expires_at, r.created_at,
               c.id as client_uuid, c.client_id as public_client_id, c.name as client_name, c.skip_consent, c.disabled
          from account_authorization_requests r join oauth_provider_clients c on c.id = r.oauth_provider_client_id
         where r.request_hash = ${requestHash}`,
    requestRow,
  );
}

/** Ends a pending request; false when it had already ended. */
export async function finishRequest(query: SqlRunner, id: string): Promise<boolean> {
  return (await query.run(sql`update account_authorization_requests set status = 'completed' where id = ${id} and status = 'pending'`)) > 0;
}

/** The consent page of the request belongs to this user. */
export async function assignRequestUser(query: SqlRunner, id: string, userId: string): Promise<void> {
  await query.run(sql`update account_authorization_requests set user_id = ${userId} where id = ${id}`);
}

/** The scopes the user consented to for this client, or undefined without a consent. */
export async function consentedScopes(query: SqlRunner, userId: string, clientUuid: string): Promise<string[] | undefined> {
  const consent = await query.one(
    sql`select scopes from account_consents where user_id = ${userId} and oauth_provider_client_id = ${clientUuid}`,
    row({ scopes: arrayOf(text) }),
  );
  return consent?.scopes;
}

/** Stores a consent to `scopes`, adding them to those the user gave this client before. */
export async function grantConsent(query: SqlRunner, userId: string, clientUuid: string, scopes: string[], now: Date): Promise<void> {
  await query.run(
    sql`insert into account_consents (id, user_id, oauth_provider_client_id, scopes, created_at, updated_at)
        values (${randomUUID()}, ${userId}, ${clientUuid}, ${JSON.stringify(scopes)}, ${now}, ${now})
        on conflict (user_id, oauth_provider_client_id) do update
          set scopes = (select jsonb_agg(distinct s) from jsonb_array_elements_text(account_consents.scopes || excluded.scopes) s),
              updated_at = excluded.updated_at`,
  );
}

export interface NewAccountCode {
  codeHash: string;
  request: RequestRow;
  userId: string;
  authTime: Date;
  expiresAt: Date;
  now: Date;
}

export async function insertCode(query: SqlRunner, code: NewAccountCode): Promise<void> {
  const { request: r } = code;
  await query.run(
    sql`insert into account_authorization_codes (id, code_hash, oauth_provider_client_id, user_id, redirect_uri, scopes, nonce,
          code_challenge, code_challenge_method, auth_time, expires_at, created_at)
        values (${randomUUID()}, ${code.codeHash}, ${r.client_uuid}, ${code.userId}, ${r.redirect_uri}, ${JSON.stringify(r.scopes)}, ${r.nonce},
          ${r.code_challenge}, ${r.code_challenge_method}, ${code.authTime}, ${code.expiresAt}, ${code.now})`,
  );
}

/**
 * Ends what a client holds from a user, or from every user when `userId` is null: codes it has
 * not exchanged yet (consumed, so a late exchange is refused as a reuse), every grant's refresh
 * token family, then its access tokens. In this order no exchange slips between the two: one
 * running now holds its code's row, so the first update waits for it and the second, a later
 * statement, sees the token it stored. Returns how many grants (codes) it ended.
 */
export async function endClientGrants(query: SqlRunner, userId: string | null, clientUuid: string, now: Date): Promise<number> {
  const whose = sql`${userId === null ? empty : sql`user_id = ${userId} and`} oauth_provider_client_id = ${clientUuid}`;
  await query.run(sql`update account_authorization_codes set consumed_at = ${now} where ${whose} and consumed_at is null`);
  // Every grant's family ends too: its refresh tokens, and any token a refresh running now issues.
  const ended = await query.run(sql`update account_authorization_codes set revoked_at = ${now} where ${whose} and revoked_at is null`);
  await query.run(sql`update account_access_tokens set revoked_at = ${now} where ${whose} and revoked_at is null`);
  return ended;
}

/** Deletes Account OAuth's flow rows that expired before `before`: access tokens, codes (their tokens go with them) and requests. */
export async function deleteExpiredAccountFlowRows(query: SqlRunner, before: Date): Promise<void> {
  await query.run(sql`delete from account_access_tokens where expires_at < ${before}`);
  await deleteExpiredRefreshTokens(query, before);
  // A code whose grant still has refresh tokens is their family: it stays while they do.
  await query.run(
    sql`delete from account_authorization_codes c where expires_at < ${before}
           and not exists (select 1 from account_refresh_tokens r where r.authorization_code_id = c.id)`,
  );
  await query.run(sql`delete from account_authorization_requests where expires_at < ${before}`);
}
