/**
 * The Game OAuth flow (issue 4): hosted sign-in sessions, the game accounts they prove, the
 * authorization codes and access tokens. The hot paths (exchange, userinfo, the verifier) use
 * plain SQL on these tables (core/game-oauth/); the entities describe the schema for the ORM.
 * Authorization codes and access tokens are stored as SHA-256 (hex) only; login codes, whose ~40
 * bits a brute force would undo, as an HMAC under a key derived from the KEK.
 */
import { randomUUID } from "node:crypto";
import { defineEntity, p, type InferEntity } from "@mikro-orm/core";
import { Organization, Server } from "./entities.ts";
import { GameOAuthClient } from "./game-oauth-entities.ts";

const id = () =>
  p
    .uuid()
    .primary()
    .onCreate(() => randomUUID());
const createdAt = () => p.datetime().onCreate(() => new Date());

/** A hosted sign-in session: 10 minutes waiting for `/outpost login <code>`. */
export const HostedAuthorization = defineEntity({
  name: "HostedAuthorization",
  tableName: "hosted_authorizations",
  properties: {
    id: id(),
    client: () => p.manyToOne(GameOAuthClient).deleteRule("cascade").fieldName("game_oauth_client_id").index(),
    organization: () => p.manyToOne(Organization).deleteRule("cascade"),
    /** Exactly as the authorization request sent it (the token request must repeat it). */
    redirectUri: p.string().length(4096),
    state: p.string().length(2048),
    nonce: p.string().length(512).nullable(),
    codeChallenge: p.string().length(256).nullable(),
    /** "S256" | "plain" */
    codeChallengeMethod: p.string().length(8).nullable(),
    /** SHA-256 (hex) of the browser binding hash the edge sends. */
    browserBindingCheck: p.string().length(64),
    /** HMAC-SHA256 (hex) of the login code under a KEK-derived key; unique among pending sessions. */
    loginCodeHash: p.string().length(64),
    /** The login code sealed under a key derived from the browser binding hash (for the page only). */
    loginCodeSealed: p.string().length(128),
    /** "pending" | "completed" | "expired" */
    status: p.string().length(16),
    /** X25519 public key (base64url) derived from the browser binding hash; completion seals to it. */
    completionKey: p.string().length(64).nullable(),
    /** When completed: redirect_uri with code, state and iss, sealed to `completionKey` (core/game-oauth/sealed-redirect.ts). */
    redirectUrlSealed: p.text().nullable(),
    /** The server of the player who claimed the session with its code (core/game-oauth/login-claims.ts). */
    claimedServer: () => p.manyToOne(Server).deleteRule("set null").fieldName("claimed_server_id").nullable(),
    /** The game account UUID of that player, who alone may confirm it there. */
    claimedPlayerUuid: p.uuid().nullable(),
    claimedPlayerName: p.string().length(64).nullable(),
    claimedAt: p.datetime().nullable(),
    /** The end of the player's time to confirm; a claim past it is no claim. */
    claimedUntil: p.datetime().nullable(),
    expiresAt: p.datetime().index(),
    completedAt: p.datetime().nullable(),
    createdAt: createdAt(),
  },
});
export type HostedAuthorization = InferEntity<typeof HostedAuthorization>;

/** A game account proven in some organization; `sub` never changes, `name` is the latest seen. */
export const GameAccount = defineEntity({
  name: "GameAccount",
  tableName: "game_accounts",
  properties: {
    id: id(),
    organization: () => p.manyToOne(Organization).deleteRule("cascade"),
    /** "minecraft" | "hytale" */
    game: p.string().length(16),
    accountUuid: p.uuid(),
    /** "gp_" + base62: the OpenID subject, stable for (organization, game, account UUID). */
    sub: p.string().length(64).unique(),
    name: p.string().length(64),
    createdAt: createdAt(),
    updatedAt: p.datetime().onCreate(() => new Date()),
  },
  uniques: [{ properties: ["organization", "game", "accountUuid"] }],
});
export type GameAccount = InferEntity<typeof GameAccount>;

/** A code issued by a completed sign-in: 90 seconds, one exchange. */
export const AuthorizationCode = defineEntity({
  name: "AuthorizationCode",
  tableName: "authorization_codes",
  properties: {
    id: id(),
    codeHash: p.string().length(64).unique(),
    client: () => p.manyToOne(GameOAuthClient).deleteRule("cascade").fieldName("game_oauth_client_id").index(),
    organization: () => p.manyToOne(Organization).deleteRule("cascade"),
    session: () => p.manyToOne(HostedAuthorization).deleteRule("cascade").fieldName("hosted_authorization_id").index(),
    account: () => p.manyToOne(GameAccount).deleteRule("cascade").fieldName("game_account_id").index(),
    /** The server that verified the player (a claim; kept if the server is deleted). */
    serverId: p.uuid(),
    redirectUri: p.string().length(4096),
    nonce: p.string().length(512).nullable(),
    codeChallenge: p.string().length(256).nullable(),
    codeChallengeMethod: p.string().length(8).nullable(),
    authTime: p.datetime(),
    expiresAt: p.datetime().index(),
    consumedAt: p.datetime().nullable(),
    /** Set when the code is presented again after being consumed: its tokens no longer work. */
    reusedAt: p.datetime().nullable(),
    createdAt: createdAt(),
  },
});
export type AuthorizationCode = InferEntity<typeof AuthorizationCode>;

/** An opaque access token (userinfo only): 15 minutes, revoked if its code is used again. */
export const AccessToken = defineEntity({
  name: "AccessToken",
  tableName: "access_tokens",
  properties: {
    id: id(),
    tokenHash: p.string().length(64).unique(),
    code: () => p.manyToOne(AuthorizationCode).deleteRule("cascade").fieldName("authorization_code_id").index(),
    // Copies of the code's, without foreign keys of their own (migration 0008): the code's cascade.
    clientId: p.uuid().fieldName("game_oauth_client_id"),
    organizationId: p.uuid(),
    accountId: p.uuid().fieldName("game_account_id"),
    serverId: p.uuid(),
    expiresAt: p.datetime().index(),
    revokedAt: p.datetime().nullable(),
    createdAt: createdAt(),
  },
});
export type AccessToken = InferEntity<typeof AccessToken>;

export const gameOAuthFlowEntities = [HostedAuthorization, GameAccount, AuthorizationCode, AccessToken];
