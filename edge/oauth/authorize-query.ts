/**
 * Reading GET …/oauth2/authorize of either issuer: each parameter's value as sent, unchecked (core
 * decides what each problem means), and which ones came more than once, which the issuers answer
 * before asking core anything.
 */

/** The parameters both issuers read, in the order a repeated one is reported. */
export const authorizeParams = ["response_type", "client_id", "redirect_uri", "state", "scope", "nonce", "code_challenge", "code_challenge_method"] as const;

export interface AuthorizeQuery {
  /** Each parameter's first value, or "". */
  values: Record<string, string>;
  /** The parameters sent more than once, in the order of `names`. */
  repeated: string[];
}

export function readAuthorizeQuery(querystring: string, names: readonly string[] = authorizeParams): AuthorizeQuery {
  const query = new URLSearchParams(querystring);
  const values: Record<string, string> = {};
  const repeated: string[] = [];
  for (const name of names) {
    const all = query.getAll(name);
    values[name] = all[0] ?? "";
    if (all.length > 1) repeated.push(name);
  }
  return { values, repeated };
}

/** The fields of both issuers' StartAuthorizationRequest that are the query's parameters as sent. */
export function startFields(values: Record<string, string>) {
  return {
    responseType: values.response_type,
    clientId: values.client_id,
    redirectUri: values.redirect_uri,
    state: values.state,
    scope: values.scope,
    nonce: values.nonce,
    codeChallenge: values.code_challenge,
    codeChallengeMethod: values.code_challenge_method,
  };
}
