/**
 * The token endpoint's engine and userinfo: the hot paths, so plain SQL, one round trip each
 * where the rules allow. A code is consumed by one UPDATE … WHERE consumed_at IS NULL: of any
 * number of concurrent exchanges exactly one gets its row. Every later check failing leaves the
 * code consumed (a new flow must start), and using a consumed code again marks it reused, which
 * revokes what it issued.
 */
import { createHash, randomUUID } from "node:crypto";
import type { EntityManager } from "@mikro-orm/postgresql";
import type { CoreDeps } from "../deps.ts";
import { hashSecret, issueSecret, secretMatches } from "../../contract/secrets.ts";

export const accessTokenTtlSeconds = 900;
export const idTokenTtlSeconds = 600;

export interface OAuthFailure {
  error: "invalid_client" | "invalid_grant" | "invalid_request" | "unsupported_grant_type" | "invalid_token";
  description: string;
}

export interface Claims {
  sub: string;
  preferredUsername: string;
  game: string;
  gameAccountName: string;
  gameAccountId: string;
  organizationId: string;
  verifiedByServerId: string;
}

export interface Tokens {
  accessToken: string;
  idToken: string;
}

export interface ExchangeInput {
  clientId: string;
  clientSecret: string;
  grantType: string;
  code: string;
  redirectUri: string;
  codeVerifier: string;
}

type Deps = Pick<CoreDeps, "clock" | "config" | "signingKeys">;

const failure = (error: OAuthFailure["error"], description: string): { failure: OAuthFailure } => ({ failure: { error, description } });

interface ConsumedRow {
  id: string;
  game_oauth_client_id: string;
  redirect_uri: string;
  nonce: string | null;
  code_challenge: string | null;
  code_challenge_method: string | null;
  auth_time: Date;
  expires_at: Date;
  organization_id: string;
  server_id: string;
  game_account_id: string;
  sub: string;
  name: string;
  game: string;
  account_uuid: string;
}

function pkceMatches(challenge: string, method: string | null, verifier: string): boolean {
  if (!/^[A-Za-z0-9._~-]{43,128}$/.test(verifier)) return false;
  const expected = method === "S256" ? createHash("sha256").update(verifier, "ascii").digest("base64url") : verifier;
  return expected === challenge;
}

/** at_hash: the left half of SHA-256 of the access token, base64url (OpenID Connect Core 3.1.3.6). */
export function atHash(accessToken: string): string {
  return createHash("sha256").update(accessToken, "ascii").digest().subarray(0, 16).toString("base64url");
}

/** Authenticates the client, consumes the code and issues an access token and one signed ID token. */
export async function exchangeCode(deps: Deps, em: EntityManager, input: ExchangeInput): Promise<{ tokens: Tokens } | { failure: OAuthFailure }> {
  const now = deps.clock.now();
  const badClient = failure("invalid_client", "client authentication failed");
  if (!input.clientId || !input.clientSecret) return badClient;
  const [client] = await em.execute<Array<{ id: string; secret_hash: string; disabled: boolean }>>(
    `select id, secret_hash, disabled from game_oauth_clients where client_id = ?`,
    [input.clientId],
  );
  // The secret is hashed and compared even for an unknown client, so timing tells nothing.
  const secretOk = secretMatches(input.clientSecret, client?.secret_hash ?? "0".repeat(64));
  if (!client || client.disabled || !secretOk) return badClient;
  if (input.grantType !== "authorization_code") return failure("unsupported_grant_type", "grant_type must be authorization_code");
  if (!input.code) return failure("invalid_request", "code is required");
  if (!input.redirectUri) return failure("invalid_request", "redirect_uri is required");

  const codeHash = hashSecret(input.code);
  const [row] = await em.execute<ConsumedRow[]>(
    `with consumed as (
       update authorization_codes set consumed_at = ? where code_hash = ? and consumed_at is null
       returning id, game_oauth_client_id, redirect_uri, nonce, code_challenge, code_challenge_method, auth_time, expires_at,
                 organization_id, server_id, game_account_id)
     select c.*, a.sub, a.name, a.game, a.account_uuid from consumed c join game_accounts a on a.id = c.game_account_id`,
    [now, codeHash],
  );
  if (!row) {
    // Unknown, or used before: the code is marked reused, which kills every token it issued —
    // including one its first use is still inserting (userinfo refuses tokens of a reused code).
    await em.execute(`update authorization_codes set reused_at = coalesce(reused_at, ?) where code_hash = ?`, [now, codeHash], "run");
    return failure("invalid_grant", "the code is invalid, expired or already used");
  }
  if (new Date(row.expires_at).getTime() <= now.getTime()) return failure("invalid_grant", "the code has expired");
  if (row.game_oauth_client_id !== client.id) return failure("invalid_grant", "the code was issued to another client");
  if (row.redirect_uri !== input.redirectUri) return failure("invalid_grant", "redirect_uri is not the one of the authorization request");
  if (row.code_challenge) {
    if (!input.codeVerifier) return failure("invalid_grant", "code_verifier is required");
    if (!pkceMatches(row.code_challenge, row.code_challenge_method, input.codeVerifier)) return failure("invalid_grant", "code_verifier does not match");
  } else if (input.codeVerifier) {
    return failure("invalid_grant", "code_verifier was sent but the authorization request had no code_challenge");
  }

  const accessToken = issueSecret("gameAccessToken");
  const iat = Math.floor(now.getTime() / 1000);
  const claims = claimsOf(row);
  const [idToken] = await Promise.all([
    deps.signingKeys.sign(
      "game",
      {
        iss: deps.config.gameIssuerUrl,
        sub: claims.sub,
        aud: input.clientId,
        exp: iat + idTokenTtlSeconds,
        iat,
        auth_time: Math.floor(new Date(row.auth_time).getTime() / 1000),
        ...(row.nonce ? { nonce: row.nonce } : {}),
        at_hash: atHash(accessToken.value),
        ...jwtClaims(claims),
      },
      { typ: "JWT" },
    ),
    em.execute(
      `insert into access_tokens (id, token_hash, authorization_code_id, game_oauth_client_id, organization_id, game_account_id, server_id, expires_at, created_at)
       values (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [randomUUID(), accessToken.hash, row.id, client.id, row.organization_id, row.game_account_id, row.server_id, new Date(now.getTime() + accessTokenTtlSeconds * 1000), now],
      "run",
    ),
  ]);
  return { tokens: { accessToken: accessToken.value, idToken } };
}

function claimsOf(row: { sub: string; name: string; game: string; account_uuid: string; organization_id: string; server_id: string }): Claims {
  return {
    sub: row.sub,
    preferredUsername: row.name,
    game: row.game,
    gameAccountName: row.name,
    gameAccountId: row.account_uuid,
    organizationId: row.organization_id,
    verifiedByServerId: row.server_id,
  };
}

/** The claims as the ID token names them. */
export function jwtClaims(claims: Claims): Record<string, string> {
  return {
    preferred_username: claims.preferredUsername,
    game: claims.game,
    game_account_name: claims.gameAccountName,
    game_account_id: claims.gameAccountId,
    organization_id: claims.organizationId,
    verified_by_server_id: claims.verifiedByServerId,
  };
}

/** The claims of a live access token of this issuer (any other string is invalid_token). */
export async function userInfo(deps: Pick<CoreDeps, "clock">, em: EntityManager, token: string): Promise<{ claims: Claims } | { failure: OAuthFailure }> {
  const invalid = failure("invalid_token", "the access token is invalid, expired or revoked");
  if (!token) return invalid;
  const [row] = await em.execute<Array<{ sub: string; name: string; game: string; account_uuid: string; organization_id: string; server_id: string }>>(
    `select a.sub, a.name, a.game, a.account_uuid, t.organization_id, t.server_id
       from access_tokens t
       join game_accounts a on a.id = t.game_account_id
       join authorization_codes c on c.id = t.authorization_code_id
      where t.token_hash = ? and t.revoked_at is null and c.reused_at is null and t.expires_at > ?`,
    [hashSecret(token), deps.clock.now()],
  );
  return row ? { claims: claimsOf(row) } : invalid;
}
