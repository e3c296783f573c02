/**
 * The per-client options of Account OAuth clients (issue 16): allowed scopes, token endpoint
 * authentication method, PKCE requirement, home page and post-logout redirect URIs. Parsed from the admin router's create and
 * update requests, applied with each change noted for the activity log, and shown back.
 */
import { TokenEndpointAuthMethod } from "../../gen/outpost/admin/v1/admin_service_pb.js";
import type { CoreDeps } from "../deps.ts";
import { fieldFail } from "../errors.ts";
import { normalizeRedirectUri } from "../oauth/redirect-uris.ts";
import { normalizeRedirectUris, sameList } from "../oauth/client-fields.ts";
import { accountScopes } from "../account-oauth/tokens.ts";

/** The stored spelling of each method (the column's values, migration 0017). */
const methodNames = {
  [TokenEndpointAuthMethod.CLIENT_SECRET_BASIC]: "client_secret_basic",
  [TokenEndpointAuthMethod.CLIENT_SECRET_POST]: "client_secret_post",
  [TokenEndpointAuthMethod.CLIENT_SECRET_BASIC_OR_POST]: "client_secret_basic_or_post",
  [TokenEndpointAuthMethod.NONE]: "none",
} as const;

export type StoredAuthMethod = (typeof methodNames)[keyof typeof methodNames];

/** What clients have unless told otherwise: what every client had before the options existed. */
export const defaultAllowedScopes = ["openid", "profile", "email"];
export const defaultAuthMethod: StoredAuthMethod = "client_secret_basic_or_post";

export function storedAuthMethod(method: TokenEndpointAuthMethod): StoredAuthMethod {
  const name = methodNames[method as keyof typeof methodNames];
  if (!name) throw fieldFail([{ field: "token_endpoint_auth_method", message: "is not a method Outpost supports" }]);
  return name;
}

export function authMethodToProto(stored: string): TokenEndpointAuthMethod {
  const entry = Object.entries(methodNames).find(([, name]) => name === stored);
  return entry ? (Number(entry[0]) as TokenEndpointAuthMethod) : TokenEndpointAuthMethod.UNSPECIFIED;
}

/** The scopes in the issuer's order; openid is required (the contract allows only known ones, once each). */
export function parseAllowedScopes(scopes: readonly string[]): string[] {
  if (!scopes.includes("openid")) throw fieldFail([{ field: "allowed_scopes", message: "must include openid" }]);
  return accountScopes.filter((s) => scopes.includes(s));
}

/** A home page: an absolute https URL (http on loopback hosts), normalized as redirect URIs are; "" is none. */
export function parseHomepage(raw: string, config: Pick<CoreDeps["config"], "allowInsecureRedirectUris">): string | null {
  if (raw === "") return null;
  const result = normalizeRedirectUri(raw, { allowInsecure: config.allowInsecureRedirectUris });
  if (!result.ok) throw fieldFail([{ field: "uri", message: result.reason }]);
  return result.uri;
}

/** The options' columns of the client entity. */
export interface ClientOptions {
  allowedScopes: string[];
  tokenEndpointAuthMethod: string;
  requirePkce: boolean;
  uri?: string | null;
  postLogoutRedirectUris: string[];
}

/** The options as a create or update request carries them (each absent when not given). */
export interface OptionsInput {
  allowedScopes?: { scopes: string[] };
  tokenEndpointAuthMethod?: TokenEndpointAuthMethod;
  requirePkce?: boolean;
  uri?: string;
}

type Config = Pick<CoreDeps["config"], "allowInsecureRedirectUris">;
const logoutUris = (uris: readonly string[], config: Config) => normalizeRedirectUris(uris, config, "post_logout_redirect_uris");

/** The options of a new client: the request's, or the defaults. */
export function newClientOptions(req: OptionsInput & { postLogoutRedirectUris: string[] }, config: Config): Required<ClientOptions> {
  return {
    postLogoutRedirectUris: logoutUris(req.postLogoutRedirectUris, config),
    allowedScopes: req.allowedScopes ? parseAllowedScopes(req.allowedScopes.scopes) : defaultAllowedScopes,
    tokenEndpointAuthMethod: req.tokenEndpointAuthMethod !== undefined ? storedAuthMethod(req.tokenEndpointAuthMethod) : defaultAuthMethod,
    requirePkce: req.requirePkce ?? false,
    uri: req.uri !== undefined ? parseHomepage(req.uri, config) : null,
  };
}

/**
 * Applies the options given and different, noting each change in `changed` (for the "updated"
 * activity event): allowedScopes and uri by their new value, the method by its name, requirePkce.
 */
export function applyOptions(
  client: ClientOptions,
  req: OptionsInput & { postLogoutRedirectUris?: { uris: string[] } },
  config: Config,
  changed: Record<string, string>,
): void {
  if (req.postLogoutRedirectUris) {
    const uris = logoutUris(req.postLogoutRedirectUris.uris, config);
    if (!sameList(uris, client.postLogoutRedirectUris)) {
      client.postLogoutRedirectUris = uris;
      changed.postLogoutRedirectUris = uris.join(" ");
    }
  }
  if (req.allowedScopes) {
    const scopes = parseAllowedScopes(req.allowedScopes.scopes);
    if (!sameList(scopes, client.allowedScopes)) {
      client.allowedScopes = scopes;
      changed.allowedScopes = scopes.join(" ");
    }
  }
  if (req.tokenEndpointAuthMethod !== undefined) {
    const method = storedAuthMethod(req.tokenEndpointAuthMethod);
    if (method !== client.tokenEndpointAuthMethod) {
      client.tokenEndpointAuthMethod = method;
      changed.tokenEndpointAuthMethod = method;
    }
  }
  if (req.requirePkce !== undefined && req.requirePkce !== client.requirePkce) {
    client.requirePkce = req.requirePkce;
    changed.requirePkce = String(req.requirePkce);
  }
  if (req.uri !== undefined) {
    const uri = parseHomepage(req.uri, config);
    if (uri !== (client.uri ?? null)) {
      client.uri = uri;
      changed.uri = uri ?? "";
    }
  }
}

/** The options' fields of the AccountOAuthClient message. */
export function optionsToProto(client: ClientOptions) {
  return {
    allowedScopes: client.allowedScopes,
    tokenEndpointAuthMethod: authMethodToProto(client.tokenEndpointAuthMethod),
    requirePkce: client.requirePkce,
    uri: client.uri ?? "",
    postLogoutRedirectUris: client.postLogoutRedirectUris,
  };
}
