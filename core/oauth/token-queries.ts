/**
 * What the token engine (core/oauth/token-engine.ts) asks of an issuer's tables: three statements,
 * which each issuer writes out in full in its own query module (core/game-oauth/game-oauth-queries.ts,
 * core/account-oauth/account-oauth-queries.ts). Both take their parameters in the order given here,
 * so the engine names them once and no statement is assembled from pieces.
 */
import type { Query } from "../db/statements.ts";

/** What every consumed code row carries, whichever issuer's table it comes from. */
export interface ConsumedCode {
  id: string;
  /** The client's row id (not its public client_id). */
  client_uuid: string;
  redirect_uri: string;
  nonce: string | null;
  code_challenge: string | null;
  code_challenge_method: string | null;
  auth_time: Date;
  expires_at: Date;
}

/** The client's columns of an exchange's row, and whether the token was stored. */
export interface ClientColumns {
  client_row_id: string;
  client_secret_hash: string;
  client_disabled: boolean;
  /** How the client must authenticate (Account OAuth; absent for Game OAuth: either secret method). */
  client_auth_method?: string;
  /** Every code of the client must carry a PKCE challenge (Account OAuth). */
  client_require_pkce?: boolean;
  issued: boolean;
}

/** What {@link TokenQueries.markReused} returns: the code's client and the code's further columns. */
export type CodeReusedRow<Row> = Omit<Row, keyof ConsumedCode> & { public_client_id: string; client_name: string };

export interface ExchangeParams {
  clientId: string;
  now: Date;
  codeHash: string;
  /** grant_type, code and redirect_uri are all as they must be: only then is the code consumed. */
  wellFormed: boolean;
  secretHash: string;
  /** How the client authenticated: "client_secret_basic", "client_secret_post", "none" or "unspecified". */
  authMethod: string;
  tokenId: string;
  tokenHash: string;
  tokenExpiresAt: Date;
  redirectUri: string;
  verifierSent: boolean;
  /** The verifier's S256 and plain challenges; null for a malformed verifier. */
  s256: string | null;
  plain: string | null;
}

/**
 * One issuer's statements, trusted constants.
 *
 * `exchange`, one round trip: looks the client up by client_id, consumes the code only when the
 * client exists, is not disabled, its secret_hash equals the presented secret's hash and the
 * request is well-formed, and stores the access token only when the consumed code passes every
 * check of the exchange (unexpired, this client's, this redirect_uri, PKCE). Parameters, in order:
 * client_id, now, code hash, well-formed, secret hash, auth method; token id, token hash, token expiry, now;
 * now, redirect_uri, a verifier was sent, the S256 and plain challenges. One row per existing
 * client (`client_*` columns), with the consumed code's columns (null when none was consumed) and
 * `issued`.
 *
 * `markReused`: marks a consumed code reused, which revokes what it issued. Parameters: now, code
 * hash. Returns the code's client and further columns only the first time, so its activity event
 * is written once.
 *
 * `userInfo`: the claims' columns of a live, unrevoked access token whose code was not reused.
 * Parameters: token hash, now.
 */
export interface TokenSql {
  exchange: string;
  markReused: string;
  userInfo: string;
}

export interface TokenQueries<Row extends ConsumedCode> {
  exchange(query: Query, p: ExchangeParams): Promise<(ClientColumns & Row) | undefined>;
  markReused(query: Query, now: Date, codeHash: string): Promise<CodeReusedRow<Row> | undefined>;
  userInfo(query: Query, tokenHash: string, now: Date): Promise<Record<string, unknown> | undefined>;
}

/** The engine's named calls over one issuer's statements. */
export function tokenQueries<Row extends ConsumedCode>(sql: TokenSql): TokenQueries<Row> {
  return {
    async exchange(query, p) {
      const [row] = await query<ClientColumns & Row>(sql.exchange, [
        p.clientId, p.now, p.codeHash, p.wellFormed, p.secretHash, p.authMethod,
        p.tokenId, p.tokenHash, p.tokenExpiresAt, p.now,
        p.now, p.redirectUri, p.verifierSent, p.s256, p.plain,
      ]);
      return row;
    },
    async markReused(query, now, codeHash) {
      const [row] = await query<CodeReusedRow<Row>>(sql.markReused, [now, codeHash]);
      return row;
    },
    async userInfo(query, tokenHash, now) {
      const [row] = await query(sql.userInfo, [tokenHash, now]);
      return row;
    },
  };
}
