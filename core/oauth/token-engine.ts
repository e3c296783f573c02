/**
 * The token and userinfo engine of both issuers: one set of rules, two configurations (a
 * {@link TokenProfile} each: its statements, its claims, its keys). These are hot paths, so plain SQL,
 * one round trip each where the rules allow.
 *
 * A code is consumed by one UPDATE … WHERE consumed_at IS NULL: of any number of concurrent
 * exchanges exactly one gets its row. Every later check failing leaves the code consumed (a new
 * flow must start), and using a consumed code again marks it reused, which revokes what it issued.
 */
import { hash, randomUUID } from "node:crypto";
import { create, type Message } from "@bufbuild/protobuf";
import type { EntityManager } from "@mikro-orm/postgresql";
import type { CodeReusedRow, ConsumedCode, TokenQueries } from "./token-queries.ts";
import { ClientAuthMethod, OAuthErrorSchema, TokenSetSchema } from "../../gen/outpost/oauth/v1/oauth_pb.js";
import type { CoreDeps } from "../deps.ts";
import type { Issuer } from "../keys/signing-keys.ts";
import { hashesMatch, hashSecret, issueSecret, type SecretKind } from "../../contract/secrets.ts";
import { recordActivity, type ActivityFacts } from "../activity/record.ts";

export const accessTokenTtlSeconds = 900;
export const idTokenTtlSeconds = 600;
export const authorizationCodeTtlMs = 90_000;

export interface OAuthFailure {
  error: "invalid_client" | "invalid_grant" | "invalid_request" | "unsupported_grant_type" | "invalid_token" | "invalid_scope" | "unauthorized_client";
  description: string;
}

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

/** One issuer's configuration of the engine. */
export interface TokenProfile<Row extends ConsumedCode, Claims> {
  /** Whose signing keys sign the ID tokens. */
  keys: Issuer;
  /** The `iss` of its ID tokens. */
  issuerUrl: string;
  accessToken: SecretKind;
  /** Its statements, written out in its query module: exchange, reuse, userinfo. */
  queries: TokenQueries<Row>;
  /**
   * The activity event for a code presented after its exchange (once per code; its tokens are then
   * revoked): `row` holds the code's client and further columns, `presentedBy` the client_id that
   * presented it again.
   */
  codeReused(row: CodeReusedRow<Row>, presentedBy: string): ActivityFacts;
  /** The claims of a consumed code (ID token) — as the userinfo endpoint names them too. */
  claims(row: Row): Claims;
  /** The claims as the ID token spells them, `sub` included. */
  jwtClaims(claims: Claims): Record<string, unknown>;
  /** The scope of the token response. */
  scope(row: Row): string;
  /** The claims of a row of its userinfo statement. */
  userInfoClaims(row: Record<string, unknown>): Claims;
  /**
   * After a good exchange: a refresh token for the code's grant, when the issuer issues one
   * (Account OAuth with offline_access), or undefined.
   */
  refreshTokenFor?(query: ReturnType<CoreDeps["statements"]["on"]>, row: Row, now: Date): Promise<string | undefined>;
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

/**
 * Whether the client authenticated as it is registered to (the statements decided the same; this
 * names the failure). The secret is compared in constant time whatever happens, even for an unknown
 * client, so timing tells nothing. A public client ("none") presents no secret; a confidential
 * one must present its secret by its method ("client_secret_basic_or_post": either).
 */
export function clientAuthenticated(
  client: { client_secret_hash: string; client_disabled: boolean; client_auth_method?: string } | undefined,
  method: string,
  secretHash: string,
): boolean {
  const secretOk = hashesMatch(secretHash, client?.client_secret_hash ?? "0".repeat(64));
  if (!client || client.client_disabled) return false;
  const registered = client.client_auth_method ?? "client_secret_basic_or_post";
  if (registered === "none") return method === "none";
  if (method === "none" || (registered !== "client_secret_basic_or_post" && registered !== method)) return false;
  return secretOk;
}

type Deps = Pick<CoreDeps, "clock" | "signingKeys" | "statements">;

const failure = (error: OAuthFailure["error"], description: string): { failure: OAuthFailure } => ({ failure: { error, description } });

/** What a code_challenge must equal for this verifier, by method; null for a malformed verifier (RFC 7636 4.1). */
function pkceChallenges(verifier: string): { s256: string; plain: string } | null {
  if (!/^[A-Za-z0-9._~-]{43,128}$/.test(verifier)) return null;
  return { s256: hash("sha256", verifier, "base64url"), plain: verifier };
}

function pkceMatches(challenge: string, method: string | null, expected: { s256: string; plain: string } | null): boolean {
  return !!expected && (method === "S256" ? expected.s256 : expected.plain) === challenge;
}

/** at_hash: the left half of SHA-256 of the access token, base64url (OpenID Connect Core 3.1.3.6). */
export function atHash(accessToken: string): string {
  return hash("sha256", accessToken, "buffer").subarray(0, 16).toString("base64url");
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
 * The database decides (one statement, the profile's `exchange`); the same checks run
 * here on the returned row to name the failure, and a token is handed out only when both agree.
 */
export async function exchangeCode<Row extends ConsumedCode, Claims>(
  profile: TokenProfile<Row, Claims>,
  deps: Deps,
  em: EntityManager,
  input: ExchangeInput,
): Promise<{ tokens: Exchanged } | { failure: OAuthFailure }> {
  const now = deps.clock.now();
  const badClient = failure("invalid_client", "client authentication failed");
  const method = authMethodName(input.clientAuthMethod);
  if (!input.clientId || (!input.clientSecret && method !== "none")) return badClient;
  const wellFormed = input.grantType === "authorization_code" && !!input.code && !!input.redirectUri;
  const codeHash = hashSecret(input.code);
  const pkce = input.codeVerifier ? pkceChallenges(input.codeVerifier) : null;
  // Issued before it is known to be needed: the statement stores it only for a good exchange.
  const accessToken = issueSecret(profile.accessToken);
  const query = deps.statements.on(em);
  const secretHash = hashSecret(input.clientSecret);
  const result = await profile.queries.exchange(query, {
    clientId: input.clientId,
    now,
    codeHash,
    wellFormed,
    secretHash,
    authMethod: method,
    tokenId: randomUUID(),
    tokenHash: accessToken.hash,
    tokenExpiresAt: new Date(now.getTime() + accessTokenTtlSeconds * 1000),
    redirectUri: input.redirectUri,
    verifierSent: !!input.codeVerifier,
    s256: pkce?.s256 ?? null,
    plain: pkce?.plain ?? null,
  });
  // The database compared hashes; the secret is compared here too, in constant time.
  if (!clientAuthenticated(result, method, secretHash)) return badClient;
  if (!result) return badClient;
  if (input.grantType !== "authorization_code") return failure("unsupported_grant_type", "grant_type must be authorization_code");
  if (!input.code) return failure("invalid_request", "code is required");
  if (!input.redirectUri) return failure("invalid_request", "redirect_uri is required");

  if (result.id == null) {
    // Unknown, or used before: the code is marked reused, which kills every token it issued —
    // including one its first use is still inserting (userinfo refuses tokens of a reused code).
    await em.transactional(async (tx) => {
      const reused = await profile.queries.markReused(deps.statements.on(tx), now, codeHash);
      // Someone held a code that was already exchanged: a leaked or replayed redirect.
      if (reused) recordActivity(tx, "system", profile.codeReused(reused, input.clientId));
    });
    return failure("invalid_grant", "the code is invalid, expired or already used");
  }
  const row: Row = result;
  if (new Date(row.expires_at).getTime() <= now.getTime()) return failure("invalid_grant", "the code has expired");
  if (row.client_uuid !== result.client_row_id) return failure("invalid_grant", "the code was issued to another client");
  if (row.redirect_uri !== input.redirectUri) return failure("invalid_grant", "redirect_uri is not the one of the authorization request");
  if (row.code_challenge) {
    if (!input.codeVerifier) return failure("invalid_grant", "code_verifier is required");
    if (!pkceMatches(row.code_challenge, row.code_challenge_method, pkce)) return failure("invalid_grant", "code_verifier does not match");
  } else if (input.codeVerifier) {
    return failure("invalid_grant", "code_verifier was sent but the authorization request had no code_challenge");
  } else if (result.client_auth_method === "none" || result.client_require_pkce) {
    return failure("invalid_grant", "this client must use PKCE, and the authorization request had no code_challenge");
  }
  // Every check passed here; the database must have stored the token by the same rules.
  if (!result.issued) return failure("invalid_grant", "the code could not be exchanged");

  const refreshToken = await profile.refreshTokenFor?.(query, row, now);
  const idToken = await signIdToken(profile, deps, {
    clientId: input.clientId,
    now,
    authTime: new Date(row.auth_time),
    nonce: row.nonce,
    accessToken: accessToken.value,
    claims: profile.claims(row),
  });
  return { tokens: { accessToken: accessToken.value, idToken, scope: profile.scope(row), ...(refreshToken && { refreshToken }) } };
}

/** One RS256 ID token for `claims`, bound to the access token issued with it (at_hash). */
export async function signIdToken<Claims>(
  profile: Pick<TokenProfile<ConsumedCode, Claims>, "keys" | "issuerUrl" | "jwtClaims">,
  deps: Pick<CoreDeps, "signingKeys">,
  t: { clientId: string; now: Date; authTime: Date; nonce: string | null; accessToken: string; claims: Claims },
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
      at_hash: atHash(t.accessToken),
      ...profile.jwtClaims(t.claims),
    },
    { typ: "JWT" },
  );
}

/** The claims of a live access token of this issuer (any other string is invalid_token). */
export async function userInfo<Row extends ConsumedCode, Claims>(
  profile: TokenProfile<Row, Claims>,
  deps: Pick<CoreDeps, "clock" | "statements">,
  em: EntityManager,
  token: string,
): Promise<{ claims: Claims } | { failure: OAuthFailure }> {
  const invalid = failure("invalid_token", "the access token is invalid, expired or revoked");
  if (!token) return invalid;
  const row = await profile.queries.userInfo(deps.statements.on(em), hashSecret(token), deps.clock.now());
  return row ? { claims: profile.userInfoClaims(row) } : invalid;
}

/** An exchange's result as the `outcome` oneof both services' ExchangeCodeResponse have. */
export function tokenOutcome(result: { tokens: Exchanged } | { failure: OAuthFailure }) {
  if ("failure" in result) return { case: "error" as const, value: create(OAuthErrorSchema, result.failure) };
  return { case: "tokens" as const, value: create(TokenSetSchema, { ...result.tokens, tokenType: "Bearer", expiresIn: accessTokenTtlSeconds }) };
}

/** A userinfo result as the `outcome` oneof both services' GetUserInfoResponse have, with the issuer's claims message. */
export function claimsOutcome<Claims, M extends Message>(result: { claims: Claims } | { failure: OAuthFailure }, toMessage: (claims: Claims) => M) {
  if ("failure" in result) return { case: "error" as const, value: create(OAuthErrorSchema, result.failure) };
  return { case: "claims" as const, value: toMessage(result.claims) };
}
