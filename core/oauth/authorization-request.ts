/**
 * The checks of an authorization request that come after the client and its redirect URI are
 * trusted, for both issuers: each problem is an OAuth error that may go back to the app by
 * redirect.
 */

export interface RedirectableError {
  error: "unsupported_response_type" | "invalid_request" | "invalid_scope";
  description: string;
}

export interface CheckedRequest {
  /** The scopes asked for, in the issuer's order, without repeats ("openid" when none were). */
  scopes: string[];
  codeChallenge: string | null;
  codeChallengeMethod: "S256" | "plain" | null;
}

export interface AuthorizationParams {
  responseType: string;
  state: string;
  scope: string;
  codeChallenge: string;
  codeChallengeMethod: string;
}

const s256Challenge = /^[A-Za-z0-9_-]{43}$/;
const plainChallenge = /^[A-Za-z0-9._~-]{43,128}$/;

/** The scopes and PKCE parameters to store, or the first problem of the request. `scopes` lists what the issuer offers, in order. */
export function checkAuthorizationParams(req: AuthorizationParams, scopes: readonly string[]): CheckedRequest | RedirectableError {
  if (req.responseType !== "code") {
    return { error: "unsupported_response_type", description: "response_type must be code" };
  }
  if (!req.state) return { error: "invalid_request", description: "state is required" };
  const requested = req.scope.split(" ").filter(Boolean);
  const unknown = requested.filter((s) => !scopes.includes(s));
  if (unknown.length) {
    return { error: "invalid_scope", description: `scope may hold ${scopes.join(", ")}; not ${unknown.join(" ")}` };
  }
  const granted = requested.length ? scopes.filter((s) => requested.includes(s)) : ["openid"];
  const method = req.codeChallengeMethod || (req.codeChallenge ? "plain" : "");
  if (!req.codeChallenge) {
    if (method) return { error: "invalid_request", description: "code_challenge_method was sent without a code_challenge" };
    return { scopes: granted, codeChallenge: null, codeChallengeMethod: null };
  }
  if (method === "S256") {
    if (!s256Challenge.test(req.codeChallenge)) {
      return { error: "invalid_request", description: "an S256 code_challenge is 43 base64url characters" };
    }
    return { scopes: granted, codeChallenge: req.codeChallenge, codeChallengeMethod: "S256" };
  }
  if (method === "plain") {
    if (!plainChallenge.test(req.codeChallenge)) {
      return { error: "invalid_request", description: "a plain code_challenge is 43 to 128 unreserved characters" };
    }
    return { scopes: granted, codeChallenge: req.codeChallenge, codeChallengeMethod: "plain" };
  }
  return { error: "invalid_request", description: "code_challenge_method must be S256 or plain" };
}

/** `uri` with `params` appended to its query (an existing query is kept). */
export function appendQuery(uri: string, params: Record<string, string>): string {
  const query = new URLSearchParams(params).toString();
  if (!uri.includes("?")) return `${uri}?${query}`;
  return uri.endsWith("?") || uri.endsWith("&") ? `${uri}${query}` : `${uri}&${query}`;
}
