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
import { TokenIntrospectionSchema, type ClientCredentials, type TokenIntrospection } from "../../gen/outpost/oauth/v1/oauth_pb.js";
import { hashSecret } from "../../contract/secrets.ts";
import type { CoreDeps } from "../deps.ts";
import type { SqlRunner } from "../db/sql.ts";
import { recordActivity, type ActivityFacts } from "../activity/record.ts";
import { badClient, clientAuthenticated, credentialsPresent, presentedClient } from "./token-engine.ts";
import type { PresentedClient } from "./exchange-checks.ts";
import { oauthFail } from "./oauth-failure.ts";

/** A client as the endpoints authenticate it. */
export interface AuthClientRow {
  client_row_id: string;
  client_secret_hash: string;
  /** `clientAuthentication` (exchange-checks.ts) held for the presented credentials. */
  client_authenticated: boolean;
  client_auth_method: string;
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
  findClient(query: SqlRunner, clientId: string, presented: PresentedClient): Promise<AuthClientRow | undefined>;
  findToken(query: SqlRunner, tokenHash: string): Promise<TokenRecord | undefined>;
  /** Revokes the token (a refresh token: its family); true only for the call that revoked it. */
  revoke(query: SqlRunner, record: TokenRecord, tokenHash: string, now: Date): Promise<boolean>;
  /** The activity event of a revocation. */
  revoked(record: TokenRecord): ActivityFacts;
}

type Deps = Pick<CoreDeps, "clock" | "statements">;

/** The authenticated client's row id; a failed authentication is thrown as invalid_client. */
async function authenticate(profile: RevocationProfile, deps: Deps, em: EntityManager, credentials: ClientCredentials | undefined, confidentialOnly: boolean) {
  const presented = presentedClient(credentials?.clientSecret ?? "", credentials?.method);
  if (!credentials || !credentialsPresent(credentials.clientId, credentials.clientSecret, presented)) throw badClient();
  const client = await profile.findClient(deps.statements.on(em), credentials.clientId, presented);
  if (!clientAuthenticated(client, presented) || !client) throw badClient();
  if (confidentialOnly && client.client_auth_method === "none") throw oauthFail("invalid_client", "only a confidential client may introspect tokens");
  return client.client_row_id;
}

/** RFC 7009: revokes a token of the authenticated client; an unknown token (or another client's) succeeds doing nothing. */
export async function revokeToken(profile: RevocationProfile, deps: Deps, em: EntityManager, req: { client?: ClientCredentials; token: string }): Promise<void> {
  const clientUuid = await authenticate(profile, deps, em, req.client, false);
  if (!req.token) throw oauthFail("invalid_request", "token is required");
  const tokenHash = hashSecret(req.token);
  const record = await profile.findToken(deps.statements.on(em), tokenHash);
  if (!record || record.clientUuid !== clientUuid) return;
  await em.transactional(async (tx) => {
    if (await profile.revoke(deps.statements.on(tx), record, tokenHash, deps.clock.now())) recordActivity(tx, "system", profile.revoked(record));
  });
}

/** RFC 7662: what a token of the authenticated confidential client is; `active: false` for anything else. */
export async function introspectToken(
  profile: RevocationProfile,
  deps: Deps,
  em: EntityManager,
  req: { client?: ClientCredentials; token: string },
): Promise<TokenIntrospection> {
  const clientUuid = await authenticate(profile, deps, em, req.client, true);
  if (!req.token) throw oauthFail("invalid_request", "token is required");
  const record = await profile.findToken(deps.statements.on(em), hashSecret(req.token));
  const now = deps.clock.now();
  const active = !!record && record.clientUuid === clientUuid && record.usable && record.expiresAt.getTime() > now.getTime();
  if (!active) return create(TokenIntrospectionSchema, { active: false });
  const seconds = (d: Date) => BigInt(Math.floor(d.getTime() / 1000));
  return create(TokenIntrospectionSchema, {
    active: true,
    scope: record.scopes.join(" "),
    clientId: record.publicClientId,
    sub: record.sub,
    exp: seconds(record.expiresAt),
    iat: seconds(record.createdAt),
    tokenType: record.kind === "access_token" ? "Bearer" : "",
    iss: profile.issuerUrl,
  });
}
