/**
 * The first step of an Account OAuth authorization request: the app and its redirect URI are
 * checked (a failure is shown on a page, since the redirect URI cannot be trusted yet), then the
 * request's parameters (a failure goes back to the app), and the request to store is built.
 */
import { randomUUID } from "node:crypto";
import type { SqlRunner } from "../db/sql.ts";
import { redirectUriMatches } from "../oauth/redirect-uris.ts";
import { appendQuery, checkAuthorizationParams, type AuthorizationParams } from "../oauth/authorization-request.ts";
import { accountScopes } from "./tokens.ts";
import { findClient, type ClientRow, type RequestRow } from "./account-oauth-queries.ts";

export const requestTtlMs = 10 * 60_000;

export type Step =
  | { case: "pageError"; value: { error: string; description: string } }
  | { case: "redirectUrl"; value: string }
  | { case: "signIn"; value: { requestId: string; reason: "" | "login" | "max_age" } }
  | {
      case: "consent";
      value: { requestId: string; clientName: string; scopes: string[]; newScopes: string[]; userEmail: string; userName: string };
    };

export interface StartInput extends AuthorizationParams {
  clientId: string;
  redirectUri: string;
  nonce: string;
  prompt: string;
  maxAge: string;
  sessionToken: string;
}

export const pageError = (error: string, description: string): Step => ({ case: "pageError", value: { error, description } });

const promptValues = new Set(["none", "login", "consent", "select_account"]);

/** The request's own parameters, checked; or the error to send back to the app. */
interface Parsed {
  scopes: string[];
  codeChallenge: string | null;
  codeChallengeMethod: string | null;
  prompts: string[];
  maxAge: number | null;
}

function parseParams(input: StartInput, client: ClientRow): Parsed | { error: string; description: string } {
  // Only what the client may ask for (a subset of what the issuer offers, in its order).
  const checked = checkAuthorizationParams(
    input,
    accountScopes.filter((s) => client.allowed_scopes.includes(s)),
  );
  if ("error" in checked) return checked;
  const back = (error: string, description: string) => ({ error, description });
  if (!checked.scopes.includes("openid")) return back("invalid_scope", "scope must include openid");
  // A public client must use PKCE, and so must a client registered with require_pkce; S256 only
  // (plain protects nothing from a reader of the authorization request).
  if (client.token_endpoint_auth_method === "none" || client.require_pkce) {
    if (!checked.codeChallenge) return back("invalid_request", "this client must send a PKCE code_challenge (S256)");
    if (checked.codeChallengeMethod !== "S256") return back("invalid_request", "this client must use code_challenge_method S256");
  }
  const prompts = input.prompt.split(" ").filter(Boolean);
  if (prompts.some((p) => !promptValues.has(p))) return back("invalid_request", "prompt may hold none, login, consent or select_account");
  if (prompts.includes("none") && prompts.length > 1) return back("invalid_request", "prompt=none cannot be combined with other values");
  if (input.maxAge && !/^\d{1,9}$/.test(input.maxAge)) return back("invalid_request", "max_age must be a whole number of seconds");
  const maxAge = input.maxAge ? Number(input.maxAge) : null;
  return { scopes: checked.scopes, codeChallenge: checked.codeChallenge, codeChallengeMethod: checked.codeChallengeMethod, prompts, maxAge };
}

/** The stored request, as findRequest reads it back. */
function requestRow(input: StartInput, client: ClientRow, p: Parsed, now: Date): RequestRow {
  return {
    id: randomUUID(),
    client_uuid: client.id,
    public_client_id: input.clientId,
    client_name: client.name,
    skip_consent: client.skip_consent,
    disabled: client.disabled,
    redirect_uri: input.redirectUri,
    state: input.state,
    scopes: p.scopes,
    nonce: input.nonce || null,
    code_challenge: p.codeChallenge,
    code_challenge_method: p.codeChallengeMethod,
    prompt_login: p.prompts.includes("login") || p.maxAge === 0,
    prompt_consent: p.prompts.includes("consent"),
    prompt_none: p.prompts.includes("none"),
    max_age: p.maxAge,
    user_id: null,
    status: "pending",
    expires_at: new Date(now.getTime() + requestTtlMs),
    created_at: now,
  };
}

/** The request to store, or the step that ends it at once (a page, or an error back to the app). */
export async function checkStart(query: SqlRunner, input: StartInput, now: Date, issuer: string): Promise<{ row: RequestRow } | { step: Step }> {
  const client = input.clientId ? await findClient(query, input.clientId) : undefined;
  if (!client) return { step: pageError("invalid_client", "unknown client_id") };
  if (client.disabled) return { step: pageError("unauthorized_client", "this app's sign-in is disabled") };
  if (!input.redirectUri || !redirectUriMatches(client.redirect_uris, input.redirectUri)) {
    return { step: pageError("invalid_request", "redirect_uri is not one this app registered") };
  }
  const parsed = parseParams(input, client);
  if ("error" in parsed) {
    const params = { error: parsed.error, error_description: parsed.description, ...(input.state && { state: input.state }), iss: issuer };
    return { step: { case: "redirectUrl", value: appendQuery(input.redirectUri, params) } };
  }
  return { row: requestRow(input, client, parsed, now) };
}
