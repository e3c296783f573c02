/**
 * The Account OAuth client options on the admin pages (issue 16): allowed scopes, how the client
 * authenticates, PKCE, home page, post-logout redirect URIs and the ID tokens' algorithm — the form fields, reading them back
 * from a form, and what the create and update calls take.
 */
import { TokenEndpointAuthMethod, type AccountOAuthClient } from "../../gen/outpost/admin/v1/admin_service_pb.js";
import type { FormErrors } from "./core.ts";
import { defaultSigningAlg } from "../../contract/issuers.ts";
import { choiceGroup, idTokenAlgField, selectField, textArea, textField } from "./forms.ts";
import { html, type Html } from "../html.ts";

export interface OptionValues {
  scopes: string[];
  authMethod: string;
  requirePkce: boolean;
  uri: string;
  postLogoutRedirectUris: string;
  idTokenAlg: string;
}

export const optionFieldNames = ["allowedScopes", "tokenEndpointAuthMethod", "requirePkce", "uri", "postLogoutRedirectUris", "idTokenSignedResponseAlg"];

const methods: ReadonlyArray<{ value: string; label: string; method: TokenEndpointAuthMethod }> = [
  {
    value: "client_secret_basic_or_post",
    label: "Client secret, HTTP Basic or in the form (client_secret_basic or client_secret_post)",
    method: TokenEndpointAuthMethod.CLIENT_SECRET_BASIC_OR_POST,
  },
  { value: "client_secret_basic", label: "Client secret, HTTP Basic only (client_secret_basic)", method: TokenEndpointAuthMethod.CLIENT_SECRET_BASIC },
  { value: "client_secret_post", label: "Client secret, in the form only (client_secret_post)", method: TokenEndpointAuthMethod.CLIENT_SECRET_POST },
  { value: "none", label: "None: a public client (browser or device app), PKCE S256 required", method: TokenEndpointAuthMethod.NONE },
];

const optionalScopes = [
  { value: "profile", label: "profile: the account's name" },
  { value: "email", label: "email: the account's email address" },
  { value: "offline_access", label: "offline_access: refresh tokens (stay connected)" },
];

const lines = (text: string) =>
  text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter(Boolean);

export const defaultOptionValues: OptionValues = {
  scopes: ["openid", "profile", "email"],
  authMethod: "client_secret_basic_or_post",
  requirePkce: false,
  uri: "",
  postLogoutRedirectUris: "",
  idTokenAlg: defaultSigningAlg,
};

export function optionValuesOf(form: URLSearchParams): OptionValues {
  return {
    scopes: ["openid", ...form.getAll("allowedScopes")],
    authMethod: form.get("tokenEndpointAuthMethod") ?? "",
    requirePkce: form.get("requirePkce") === "yes",
    uri: (form.get("uri") ?? "").trim(),
    postLogoutRedirectUris: form.get("postLogoutRedirectUris") ?? "",
    idTokenAlg: form.get("idTokenSignedResponseAlg") ?? defaultSigningAlg,
  };
}

export function optionValuesFrom(c: AccountOAuthClient): OptionValues {
  return {
    scopes: c.allowedScopes,
    authMethod: methods.find((m) => m.method === c.tokenEndpointAuthMethod)?.value ?? "",
    requirePkce: c.requirePkce,
    uri: c.uri,
    postLogoutRedirectUris: c.postLogoutRedirectUris.join("\n"),
    idTokenAlg: c.idTokenSignedResponseAlg,
  };
}

/** The options as createAccountOAuthClient takes them (an unknown method is left for core to refuse). */
export function createOptions(v: OptionValues) {
  return {
    allowedScopes: { scopes: v.scopes },
    tokenEndpointAuthMethod: methods.find((m) => m.value === v.authMethod)?.method ?? TokenEndpointAuthMethod.UNSPECIFIED,
    requirePkce: v.requirePkce,
    uri: v.uri,
    postLogoutRedirectUris: lines(v.postLogoutRedirectUris),
    idTokenSignedResponseAlg: v.idTokenAlg,
  };
}

/** The options as updateAccountOAuthClient takes them. */
export function updateOptions(v: OptionValues) {
  const { postLogoutRedirectUris, ...rest } = createOptions(v);
  return { ...rest, postLogoutRedirectUris: { uris: postLogoutRedirectUris } };
}

export function optionFields(v: OptionValues, errors?: FormErrors): Html {
  return html`${choiceGroup({
    name: "allowedScopes",
    legend: "Scopes the app may ask for",
    type: "checkbox",
    hint: "openid is always allowed. A request for another scope is refused (invalid_scope).",
    options: optionalScopes,
    checked: new Set(v.scopes),
    errors,
  })}
${selectField({ name: "tokenEndpointAuthMethod", label: "Client authentication", value: v.authMethod, options: methods, errors })}
${choiceGroup({
  name: "requirePkce",
  legend: "PKCE",
  type: "checkbox",
  options: [{ value: "yes", label: "Require PKCE (S256) on every sign-in" }],
  checked: new Set(v.requirePkce ? ["yes"] : []),
  errors,
})}
${textField({ name: "uri", label: "Home page", type: "url", value: v.uri, maxlength: 2048, hint: "Optional. https, except on localhost.", errors })}
${idTokenAlgField(v.idTokenAlg, errors)}
${textArea({ name: "postLogoutRedirectUris", label: "Return URLs after logout", value: v.postLogoutRedirectUris, rows: 2, hint: "Optional, one per line, up to 16 (post_logout_redirect_uris): where the app's logout may return people to, matched exactly.", errors })}`;
}
