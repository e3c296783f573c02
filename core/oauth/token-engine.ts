/**
 * The token and userinfo engine of both issuers: one set of rules, two configurations (a
 * {@link TokenProfile} each: its statements, its claims, its keys). These are hot paths, so plain SQL,
 * one round trip each where the rules allow.
 *
 * A code is consumed by one UPDATE … WHERE consumed_at IS NULL: of any number of concurrent
 * exchanges exactly one gets its row. Every later check failing leaves the code consumed (a new
 * flow must start), and using a consumed code again marks it reused, which revokes what it issued.
 * The checks are written once, in exchange-checks.ts: the statement computes them and stores the
 * token only where all hold; the engine names the first that failed from the same results.
 * Failures are thrown ({@link oauthFail}), and the edge answers them.
 */
import { hash, randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import type { EntityManager } from "@mikro-orm/postgresql";
import type { SqlRunner } from "../db/sql.ts";
import type { ConsumedCode, TokenQueries } from "./token-queries.ts";
import { firstFailedCheck, type PresentedClient } from "./exchange-checks.ts";
import { oauthFail, type OAuthFailure } from "./oauth-failure.ts";
import { ClientAuthMethod, TokenSetSchema, type TokenSet } from "../../gen/outpost/oauth/v1/oauth_pb.js";
import type { CoreDeps } from "../deps.ts";
import type { Issuer, SigningAlg } from "../keys/signing-keys.ts";
import { hashesMatch, hashSecret, issueSecret, type SecretKind } from "../../contract/secrets.ts";
import { recordActivity, type ActivityFacts } from "../activity/record.ts";

export const accessTokenTtlSeconds = 900;
export const idTokenTtlSeconds = 600;
export const authorizationCodeTtlMs = 90_000;

export interface ExchangeInput {
  clientId: string;
  clientSecret: string;
  /** How the edge saw the client authenticate; unspecified passes only where either secret method does. */
  clientAuthMethod?: ClientAuthMethod;
  grantType: string;
  code: string;
  redirectUri: string;
  codeVerifier: string;
}

/** One issuer's configuration of the engine, over its consumed codes, reused-code rows and userinfo rows. */
export interface TokenProfile<Code extends ConsumedCode, Reused, Info, Claims> {
  /** Whose signing keys sign the ID tokens. */
  keys: Issuer;
  /** The `iss` of its ID tokens. */
  issuerUrl: string;
  accessToken: SecretKind;
  /** Its statements, written out in its query module: exchange, reuse, userinfo. */
  queries: TokenQueries<Code, Reused, Info>;
  /**
   * The activity event for a code presented after its exchange (once per code; its tokens are then
   * revoked): `row` holds the code's client and further columns, `presentedBy` the client_id that
   * presented it again.
   */
  codeReused(row: Reused, presentedBy: string): ActivityFacts;
  /** The claims of a consumed code (ID token) — as the userinfo endpoint names them too. */
  claims(code: Code): Claims;
  /** The claims as the ID token spells them, `sub` included. */
  jwtClaims(claims: Claims): Record<string, unknown>;
  /** The scope of the token response. */
  scope(code: Code): string;
  /** The claims of a row of its userinfo statement. */
  userInfoClaims(row: Info): Claims;
  /**
   * After a good exchange: a refresh token for the code's grant, when the issuer issues one
   * (Account OAuth with offline_access), or undefined.
   */
  refreshTokenFor?(query: SqlRunner, code: Code, now: Date): Promise<string | undefined>;
}

/** The stored and SQL spelling of how a client authenticated. */
export function authMethodName(method: ClientAuthMethod | undefined): string {
  switch (method) {
    case ClientAuthMethod.CLIENT_SECRET_BASIC:
      return "client_secret_basic";
    case ClientAuthMethod.CLIENT_SECRET_POST:
      return "client_secret_post";
    case ClientAuthMethod.NONE:
      return "none";
    default:
      return "unspecified";
  }
}

/** The credentials a request presents, as the statements check them. */
export function presentedClient(clientSecret: string, method: ClientAuthMethod | undefined): PresentedClient {
  return { secretHash: hashSecret(clientSecret), method: authMethodName(method) };
}

/**
 * Whether the client authenticated: the statement judged it by its registration
 * (`clientAuthentication` in exchange-checks.ts, its `client_authenticated` column), and a
 * presented secret's hash is compared here once more, in constant time whatever happens (even for
 * an unknown client), so timing tells nothing.
 */
export function clientAuthenticated(client: { client_secret_hash: string; client_authenticated: boolean } | undefined, presented: PresentedClient): boolean {
  const secretMatches = hashesMatch(presented.secretHash, client?.client_secret_hash ?? "0".repeat(64));
  return !!client?.client_authenticated && (presented.method === "none" || secretMatches);
}

/** The refusal of a client whose authentication failed, at any endpoint. */
export const badClient = () => oauthFail("invalid_client", "client authentication failed");

/** A client_id, and a secret unless the client says it is public: without them nothing is looked up. */
export const credentialsPresent = (clientId: string, clientSecret: string, presented: PresentedClient) => !!clientId && (!!clientSecret || presented.method === "none");

type Deps = Pick<CoreDeps, "clock" | "signingKeys" | "statements">;

/** What a code_challenge must equal for this verifier, by method; null for a malformed verifier (RFC 7636 4.1). */
function pkceChallenges(verifier: string): { s256: string; plain: string } | null {
  if (!/^[A-Za-z0-9._~-]{43,128}$/.test(verifier)) return null;
  return { s256: hash("sha256", verifier, "base64url"), plain: verifier };
}

/** What is wrong with an authorization_code request's form, told once its client has authenticated. */
function malformedExchange(input: ExchangeInput): OAuthFailure | undefined {
  if (input.grantType !== "authorization_code") return { error: "unsupported_grant_type", description: "grant_type must be authorization_code" };
  if (!input.code) return { error: "invalid_request", description: "code is required" };
  if (!input.redirectUri) return { error: "invalid_request", description: "redirect_uri is required" };
  return undefined;
}

/**
 * at_hash: the left half of the access token's hash, base64url (OpenID Connect Core 3.1.3.6), by
 * the hash of the ID token's algorithm: SHA-256 for RS256 and ES256, SHA-512 for EdDSA over
 * Ed25519 (as the OpenID Connect errata and other issuers take it).
 */
export function atHash(accessToken: string, alg: SigningAlg): string {
  const digest = hash(alg === "EdDSA" ? "sha512" : "sha256", accessToken, "buffer");
  return digest.subarray(0, digest.length / 2).toString("base64url");
}

export interface Exchanged {
  accessToken: string;
  /** Empty when none was issued (a refresh narrowed to scopes without openid). */
  idToken: string;
  scope: string;
  refreshToken?: string;
}

/**
 * Authenticates the client, consumes the code and issues an access token and one signed ID token.
 * The database decides (one statement, the profile's `exchange`, over the checks of
 * exchange-checks.ts); a refusal names the client authentication, the request's form or the first
 * check that failed, and is thrown.
 */
export async function exchangeCode<Code extends ConsumedCode, Reused, Info, Claims>(
  profile: TokenProfile<Code, Reused, Info, Claims>,
  deps: Deps,
  em: EntityManager,
  input: ExchangeInput,
): Promise<Exchanged> {
  const now = deps.clock.now();
  const presented = presentedClient(input.clientSecret, input.clientAuthMethod);
  if (!credentialsPresent(input.clientId, input.clientSecret, presented)) throw badClient();
  const malformed = malformedExchange(input);
  const codeHash = hashSecret(input.code);
  const pkce = input.codeVerifier ? pkceChallenges(input.codeVerifier) : null;
  // Issued before it is known to be needed: the statement stores it only for a good exchange.
  const accessToken = issueSecret(profile.accessToken);
  const query = deps.statements.on(em);
  const result = await profile.queries.exchange(query, {
    ...presented,
    clientId: input.clientId,
    now,
    codeHash,
    wellFormed: !malformed,
    tokenId: randomUUID(),
    tokenHash: accessToken.hash,
    tokenExpiresAt: new Date(now.getTime() + accessTokenTtlSeconds * 1000),
    redirectUri: input.redirectUri,
    verifierSent: !!input.codeVerifier,
    s256: pkce?.s256 ?? null,
    plain: pkce?.plain ?? null,
  });
  // Compared first, so an unknown client costs the same constant-time comparison.
  if (!clientAuthenticated(result, presented) || !result) throw badClient();
  if (malformed) throw oauthFail(malformed.error, malformed.description);

  const code = result.code;
  if (!code) {
    // Unknown, or used before: the code is marked reused, which kills every token it issued —
    // including one its first use is still inserting (userinfo refuses tokens of a reused code).
    await em.transactional(async (tx) => {
      const reused = await profile.queries.markReused(deps.statements.on(tx), now, codeHash);
      // Someone held a code that was already exchanged: a leaked or replayed redirect.
      if (reused) recordActivity(tx, "system", profile.codeReused(reused, input.clientId));
    });
    throw oauthFail("invalid_grant", "the code is invalid, expired or already used");
  }
  // The statement stored the token exactly when every check held.
  const failed = firstFailedCheck(code.checks);
  if (failed) throw oauthFail(failed.error, failed.description);

  const refreshToken = await profile.refreshTokenFor?.(query, code, now);
  const idToken = await signIdToken(profile, deps, {
    clientId: input.clientId,
    alg: result.client_id_token_alg,
    now,
    authTime: code.auth_time,
    nonce: code.nonce,
    accessToken: accessToken.value,
    claims: profile.claims(code),
  });
  return { accessToken: accessToken.value, idToken, scope: profile.scope(code), ...(refreshToken && { refreshToken }) };
}

/** One ID token for `claims`, signed with the client's algorithm, bound to the access token issued with it (at_hash). */
export async function signIdToken<Claims>(
  profile: Pick<TokenProfile<ConsumedCode, unknown, unknown, Claims>, "keys" | "issuerUrl" | "jwtClaims">,
  deps: Pick<CoreDeps, "signingKeys">,
  t: { clientId: string; alg: SigningAlg; now: Date; authTime: Date; nonce: string | null; accessToken: string; claims: Claims },
): Promise<string> {
  const iat = Math.floor(t.now.getTime() / 1000);
  return deps.signingKeys.sign(
    profile.keys,
    {
      iss: profile.issuerUrl,
      aud: t.clientId,
      exp: iat + idTokenTtlSeconds,
      iat,
      auth_time: Math.floor(t.authTime.getTime() / 1000),
      ...(t.nonce ? { nonce: t.nonce } : {}),
      at_hash: atHash(t.accessToken, t.alg),
      ...profile.jwtClaims(t.claims),
    },
    { typ: "JWT" },
    t.alg,
  );
}

/** The claims of a live access token of this issuer (any other string is invalid_token). */
export async function userInfo<Code extends ConsumedCode, Reused, Info, Claims>(
  profile: TokenProfile<Code, Reused, Info, Claims>,
  deps: Pick<CoreDeps, "clock" | "statements">,
  em: EntityManager,
  token: string,
): Promise<Claims> {
  const row = token ? await profile.queries.userInfo(deps.statements.on(em), hashSecret(token), deps.clock.now()) : undefined;
  if (!row) throw oauthFail("invalid_token", "the access token is invalid, expired or revoked");
  return profile.userInfoClaims(row);
}

/** Issued tokens as both services' ExchangeCodeResponse carries them. */
export function tokenSet(tokens: Exchanged): TokenSet {
  return create(TokenSetSchema, { ...tokens, tokenType: "Bearer", expiresIn: accessTokenTtlSeconds });
}
