/** Game OAuth: clients (issue 4). Secrets are stored as SHA-256 (hex) and a display prefix. */
import { randomUUID } from "node:crypto";
import { defineEntity, p, type InferEntity } from "@mikro-orm/core";
import { Organization, Server } from "./entities.ts";
import { defaultSigningAlg, type SigningAlg } from "../../contract/issuers.ts";

export const GameOAuthClient = defineEntity({
  name: "GameOAuthClient",
  tableName: "game_oauth_clients",
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => randomUUID()),
    organization: () => p.manyToOne(Organization).deleteRule("cascade").index(),
    /** The public "ogc_…" identifier, by which the issuer finds the client. */
    clientId: p.string().length(32).unique(),
    name: p.string().length(80),
    /** Normalized (core/oauth/redirect-uris.ts), 1 to 16. */
    redirectUris: p.json<string[]>(),
    /** "any_server" | "selected_servers" */
    verifierPolicy: p.string().length(32),
    /** How its ID tokens are signed: "RS256", "ES256" or "EdDSA" (migration 0038). */
    idTokenSignedResponseAlg: p.string().length(8).$type<SigningAlg>().default(defaultSigningAlg),
    secretHash: p.string().length(64),
    secretPrefix: p.string().length(16),
    disabled: p.boolean().default(false),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type GameOAuthClient = InferEntity<typeof GameOAuthClient>;

/**
 * A server allowed to verify sign-ins for a client under the "selected_servers" policy. Deleting
 * the server (or the client) deletes the row, so a deleted server drops out of every list.
 */
export const GameOAuthClientServer = defineEntity({
  name: "GameOAuthClientServer",
  tableName: "game_oauth_client_servers",
  properties: {
    client: () => p.manyToOne(GameOAuthClient).primary().deleteRule("cascade").fieldName("game_oauth_client_id"),
    server: () => p.manyToOne(Server).primary().deleteRule("cascade").index(),
  },
});
export type GameOAuthClientServer = InferEntity<typeof GameOAuthClientServer>;

export const gameOAuthEntities = [GameOAuthClient, GameOAuthClientServer];
