/**
 * A first-party Account OAuth app (skipConsent) and a signed-in dashboard user, without a browser:
 * each `code()` is an authorization code from /api/auth/oauth2/authorize with its own PKCE verifier,
 * and `exchange` redeems one at the token endpoint with client_secret_basic. For tests and
 * benchmarks that need codes in numbers, not the pages.
 */
import { createHash, randomBytes } from "node:crypto";

export interface FirstPartyApp {
  clientId: string;
  clientSecret: string;
  redirectUri: string;
}

export interface Minted {
  code: string;
  verifier: string;
}

export interface FirstPartyFlow {
  /** The signed-in user's session cookie (`name=value`), for their other requests. */
  cookie: string;
  /** A new authorization code for the signed-in user. */
  code(): Promise<Minted>;
  /** The token endpoint's answer to this code. */
  exchange(minted: Minted): Promise<Response>;
}

/** Signs `user` in through POST /sign-in (failing loudly if it does not) and returns the flow. */
export async function firstPartyFlow(baseUrl: string, app: FirstPartyApp, user: { email: string; password: string }): Promise<FirstPartyFlow> {
  const signedIn = await fetch(`${baseUrl}/sign-in`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(user),
  });
  if (signedIn.status !== 200) throw new Error(`sign-in: ${signedIn.status} ${await signedIn.text()}`);
  const cookie = signedIn.headers.get("set-cookie")!.split(";")[0];
  const basic = `Basic ${Buffer.from(`${encodeURIComponent(app.clientId)}:${encodeURIComponent(app.clientSecret)}`).toString("base64")}`;
  return {
    cookie,
    async code() {
      const verifier = randomBytes(32).toString("base64url");
      const query = new URLSearchParams({
        response_type: "code",
        client_id: app.clientId,
        redirect_uri: app.redirectUri,
        scope: "openid profile email",
        state: "s",
        nonce: "n",
        code_challenge: createHash("sha256").update(verifier).digest("base64url"),
        code_challenge_method: "S256",
      });
      const res = await fetch(`${baseUrl}/api/auth/oauth2/authorize?${query}`, { redirect: "manual", headers: { cookie } });
      const code = new URL(res.headers.get("location") ?? "http://invalid/").searchParams.get("code");
      if (!code) throw new Error(`authorize: ${res.status} ${res.headers.get("location")}`);
      return { code, verifier };
    },
    exchange({ code, verifier }) {
      return fetch(`${baseUrl}/api/auth/oauth2/token`, {
        method: "POST",
        headers: { authorization: basic, "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ grant_type: "authorization_code", code, redirect_uri: app.redirectUri, code_verifier: verifier }),
      });
    },
  };
}
