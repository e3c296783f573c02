/**
 * What the token engine (core/oauth/token-engine.ts) asks of an issuer's tables: three
 * statements, which each issuer writes out in its own query module
 * (core/game-oauth/game-oauth-queries.ts, core/account-oauth/account-oauth-queries.ts) with the
 * shared checks of exchange-checks.ts as fragments, and the row an exchange answers.
 */
import type { SqlRunner } from "../db/sql.ts";
import { arrayOf, bool, nullable, oneOf, row, text, timestamp, type Decode } from "../db/rows.ts";
import { signingAlgs, type SigningAlg } from "../../contract/issuers.ts";
import type { CodeCheckParams, PresentedClient } from "./exchange-checks.ts";

/** What every consumed code carries to the engine, whichever issuer's table it comes from. */
export interface ConsumedCode {
  id: string;
  nonce: string | null;
  auth_time: Date;
  /** The checks' results, in the order of `codeChecks` (exchange-checks.ts). */
  checks: boolean[];
}

/**
 * The row of an exchange, for an issuer whose consumed code also has `issuerColumns`: the client's
 * columns (no row when no client has the client_id), and `code`, the consumed code with its
 * checks, or null when none was consumed (unknown, used before, or not to be consumed: the client
 * failed to authenticate or the request is malformed). The code comes as a `row_to_json` object.
 */
export function exchangeRow<S extends Record<string, Decode<unknown>>>(issuerColumns: S) {
  return row({
    client_row_id: text,
    client_secret_hash: text,
    /** `clientAuthentication` (exchange-checks.ts) held. */
    client_authenticated: bool,
    /** How the client's ID tokens are signed. */
    client_id_token_alg: oneOf(...signingAlgs),
    code: nullable(row({ id: text, nonce: nullable(text), auth_time: timestamp, checks: arrayOf(bool), ...issuerColumns })),
  });
}

/** What an exchange answers, for a consumed code of type `Code`. */
export interface ExchangeRow<Code extends ConsumedCode> {
  client_row_id: string;
  client_secret_hash: string;
  client_authenticated: boolean;
  client_id_token_alg: SigningAlg;
  code: Code | null;
}

export interface ExchangeParams extends PresentedClient, CodeCheckParams {
  clientId: string;
  codeHash: string;
  /** grant_type, code and redirect_uri are all as they must be: only then is the code consumed. */
  wellFormed: boolean;
  tokenId: string;
  tokenHash: string;
  tokenExpiresAt: Date;
}

/**
 * One issuer's statements.
 *
 * `exchange`, one round trip: looks the client up by client_id (as `cl`), consumes the code only
 * when `clientAuthentication` holds and the request is well-formed, computes `codeCheckResults`
 * of the consumed code (as `c`), and stores the access token only where every check holds. Of
 * any number of concurrent exchanges of one code exactly one consumes it.
 *
 * `markReused`: marks a consumed code reused, which revokes what it issued. Returns the code's
 * client and further columns only the first time, so its activity event is written once.
 *
 * `userInfo`: the claims' columns of a live, unrevoked access token whose code was not reused.
 */
export interface TokenQueries<Code extends ConsumedCode, Reused, Info> {
  exchange(query: SqlRunner, p: ExchangeParams): Promise<ExchangeRow<Code> | undefined>;
  markReused(query: SqlRunner, now: Date, codeHash: string): Promise<Reused | undefined>;
  userInfo(query: SqlRunner, tokenHash: string, now: Date): Promise<Info | undefined>;
}
