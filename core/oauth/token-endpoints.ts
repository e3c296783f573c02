/**
 * Token revocation (RFC 7009) and introspection (RFC 7662) of both issuers: one set of rules, each
 * issuer's tables behind a {@link RevocationProfile}. The client authenticates as at the token
 * endpoint; a token is only ever revoked or described to the client it was issued to (another
 * client's token is answered as an unknown one: revocation succeeds doing nothing, introspection
 * says inactive), so neither endpoint tells a client anything about tokens it does not hold.
 * Introspection is for confidential clients only: a public client cannot prove who asks.
 */
import { create } from "@bufbuild/protobuf";
import type { EntityManager } from "@mikro-orm/postgresql";
import { OAuthErrorSchema, TokenIntrospectionSchema, type ClientCredentials } from "../../gen/outpost/oauth/v1/oauth_pb.js";
import { hashSecret } from "../../contract/secrets.ts";
import type { CoreDeps } from "../deps.ts";
import type { SqlRunner } from "../db/sql.ts";
import { recordActivity, type ActivityFacts } from "../activity/record.ts";
import { authMethodName, clientAuthenticated, type OAuthFailure } from "./token-engine.ts";

/** A client as the endpoints authenticate it. */
export interface AuthClientRow {
  client_row_id: string;
  client_secret_hash: string;
  client_disabled: boolean;
  client_auth_method?: string;
}

/** A token of the issuer, found by its hash. */
export interface TokenRecord {
  kind: "access_token" | "refresh_token";
  clientUuid: string;
  publicClientId: string;
  sub: string;
  scopes: string[];
  expiresAt: Date;
  createdAt: Date;
  /** Unrevoked, its grant alive, its client enabled, and (for a refresh token) unused. */
  usable: boolean;
}

export interface RevocationProfile {
  issuerUrl: string;
  findClient(query: SqlRunner, clientId: string): Promise<AuthClientRow | undefined>;
  findToken(query: SqlRunner, tokenHash: string): Promise<TokenRecord | undefined>;
  /** Revokes the token (a refresh token: its family); true only for the call that revoked it. */
  revoke(query: SqlRunner, record: TokenRecord, tokenHash: string, now: Date): Promise<boolean>;
  /** The activity event of a revocation. */
  revoked(record: TokenRecord): ActivityFacts;
}

type Deps = Pick<CoreDeps, "clock" | "statements">;

const failure = (error: OAuthFailure["error"], description: string) => create(OAuthErrorSchema, { error, description });

/** The authenticated client's row id, or the invalid_client error. */
async function authenticate(profile: RevocationProfile, deps: Deps, em: EntityManager, credentials: ClientCredentials | undefined, confidentialOnly: boolean) {
  const method = authMethodName(credentials?.method);
  const bad = { error: failure("invalid_client", "client authentication failed") };
  if (!credentials?.clientId || (!credentials.clientSecret && method !== "none")) return bad;
  const secretHash = hashSecret(credentials.clientSecret);
  const client = await profile.findClient(deps.statements.on(em), credentials.clientId);
  if (!clientAuthenticated(client, method, secretHash) || !client) return bad;
  if (confidentialOnly && client.client_auth_method === "none") {
    return { error: failure("invalid_client", "only a confidential client may introspect tokens") };
  }
  return { clientUuid: client.client_row_id };
}

/** RFC 7009: revokes a token of the authenticated client; an unknown token (or another client's) succeeds doing nothing. */
export async function revokeToken(profile: RevocationProfile, deps: Deps, em: EntityManager, req: { client?: ClientCredentials; token: string }) {
  const client = await authenticate(profile, deps, em, req.client, false);
  if ("error" in client) return client.error;
  if (!req.token) return failure("invalid_request", "token is required");
  const tokenHash = hashSecret(req.token);
  const record = await profile.findToken(deps.statements.on(em), tokenHash);
  if (!record || record.clientUuid !== client.clientUuid) return undefined;
  await em.transactional(async (tx) => {
    if (await profile.revoke(deps.statements.on(tx), record, tokenHash, deps.clock.now())) recordActivity(tx, "system", profile.revoked(record));
  });
  return undefined;
}

/** RFC 7662: what a token of the authenticated confidential client is; `active: false` for anything else. */
export async function introspectToken(profile: RevocationProfile, deps: Deps, em: EntityManager, req: { client?: ClientCredentials; token: string }) {
  const client = await authenticate(profile, deps, em, req.client, true);
  if ("error" in client) return { case: "error" as const, value: client.error };
  if (!req.token) return { case: "error" as const, value: failure("invalid_request", "token is required") };
  const record = await profile.findToken(deps.statements.on(em), hashSecret(req.token));
  const now = deps.clock.now();
  const active = !!record && record.clientUuid === client.clientUuid && record.usable && record.expiresAt.getTime() > now.getTime();
  if (!active) return { case: "introspection" as const, value: create(TokenIntrospectionSchema, { active: false }) };
  const seconds = (d: Date) => BigInt(Math.floor(d.getTime() / 1000));
  return {
    case: "introspection" as const,
    value: create(TokenIntrospectionSchema, {
      active: true,
      scope: record.scopes.join(" "),
      clientId: record.publicClientId,
      sub: record.sub,
      exp: seconds(record.expiresAt),
      iat: seconds(record.createdAt),
      tokenType: record.kind === "access_token" ? "Bearer" : "",
      iss: profile.issuerUrl,
    }),
  };
}
