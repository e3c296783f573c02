/**
 * Account OAuth (issue 5): the apps platform admins register and the consents users give them.
 * The flow's tables (account_authorization_requests, _codes, account_access_tokens) are used with
 * plain SQL only (core/account-oauth/); migration 0007 describes them.
 */
import { randomUUID } from "node:crypto";
import { defineEntity, p, type InferEntity } from "@mikro-orm/core";
import { User } from "./entities.ts";
import { defaultSigningAlg, type SigningAlg } from "../../contract/issuers.ts";

export const AccountOAuthClient = defineEntity({
  name: "AccountOAuthClient",
  tableName: "oauth_provider_clients",
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => randomUUID()),
    /** The public "oac_…" identifier, by which the issuer finds the client. */
    clientId: p.string().length(32).unique(),
    name: p.string().length(80),
    /** Normalized (core/oauth/redirect-uris.ts), 1 to 16. */
    redirectUris: p.json<string[]>(),
    /** First-party apps: no consent page. */
    skipConsent: p.boolean().default(false),
    disabled: p.boolean().default(false),
    /** What the client may ask for, in the issuer's order (migration 0017). */
    allowedScopes: p.json<string[]>(),
    /** 'client_secret_basic', 'client_secret_post', 'client_secret_basic_or_post' or 'none' (public). */
    tokenEndpointAuthMethod: p.string().length(32).default("client_secret_basic_or_post"),
    /** Every authorization request must carry a PKCE S256 challenge. */
    requirePkce: p.boolean().default(false),
    /** How its ID tokens are signed: "RS256", "ES256" or "EdDSA" (migration 0038). */
    idTokenSignedResponseAlg: p.string().length(8).$type<SigningAlg>().default(defaultSigningAlg),
    /** The app's home page. */
    uri: p.string().length(2048).nullable(),
    /** Where RP-initiated logout may return the browser (normalized as redirect URIs, 0 to 16). */
    postLogoutRedirectUris: p.json<string[]>(),
    secretHash: p.string().length(64),
    secretPrefix: p.string().length(16),
    createdBy: () => p.manyToOne(User).nullable().deleteRule("set null").fieldName("created_by_user_id"),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type AccountOAuthClient = InferEntity<typeof AccountOAuthClient>;

/** The scopes a user granted an app; one row per (user, app), grown when the app asks for more. */
export const AccountConsent = defineEntity({
  name: "AccountConsent",
  tableName: "account_consents",
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => randomUUID()),
    user: () => p.manyToOne(User).deleteRule("cascade"),
    client: () => p.manyToOne(AccountOAuthClient).deleteRule("cascade").fieldName("oauth_provider_client_id").index(),
    scopes: p.json<string[]>(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()),
  },
  uniques: [{ properties: ["user", "client"], name: "account_consents_user_client_unique" }],
});
export type AccountConsent = InferEntity<typeof AccountConsent>;

export const accountOAuthEntities = [AccountOAuthClient, AccountConsent];
