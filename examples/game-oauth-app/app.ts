/**
 * A third-party app that signs a player in with Outpost's Game OAuth issuer: node:http and
 * openid-client 6 (discovery, PKCE S256, state, nonce, ID token validation, userinfo).
 *
 *   OUTPOST_ISSUER=http://localhost:3001 CLIENT_ID=ogc_… CLIENT_SECRET=ogs_… node examples/game-oauth-app/app.ts
 */
import { createServer } from "node:http";
import { randomBytes } from "node:crypto";
import * as oidc from "openid-client";

const issuer = new URL(process.env.OUTPOST_ISSUER ?? "http://localhost:3001");
const port = Number(process.env.PORT ?? 4000);
const redirectUri = process.env.REDIRECT_URI ?? `http://localhost:${port}/callback`;
const clientId = process.env.CLIENT_ID;
const clientSecret = process.env.CLIENT_SECRET;
if (!clientId || !clientSecret) throw new Error("set CLIENT_ID and CLIENT_SECRET (a Game OAuth client of your organization)");

// http is only for a local Outpost; in production the issuer is https.
const config = await oidc.discovery(issuer, clientId, clientSecret, undefined, issuer.protocol === "http:" ? { execute: [oidc.allowInsecureRequests] } : {});

/** Sign-ins in progress, keyed by a random cookie: the PKCE verifier, state and nonce. */
const pending = new Map<string, { verifier: string; state: string; nonce: string }>();
const escape = (s: unknown) => String(s).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const page = (body: string) => `<!doctype html><meta charset="utf-8"><title>Game OAuth example</title><body style="font-family:sans-serif">${body}</body>`;

createServer(async (req, res) => {
  const url = new URL(req.url ?? "/", redirectUri);
  const cookie = /(?:^|;\s*)example_signin=([\w-]+)/.exec(req.headers.cookie ?? "")?.[1];
  try {
    if (url.pathname === "/") {
      res.writeHead(200, { "content-type": "text/html" }).end(page(`<h1>Example app</h1><p><a href="/login">Sign in with your game account</a></p>`));
    } else if (url.pathname === "/login") {
      const id = randomBytes(18).toString("base64url");
      const checks = { verifier: oidc.randomPKCECodeVerifier(), state: oidc.randomState(), nonce: oidc.randomNonce() };
      pending.set(id, checks);
      setTimeout(() => pending.delete(id), 15 * 60_000).unref();
      const location = oidc.buildAuthorizationUrl(config, {
        redirect_uri: redirectUri,
        scope: "openid profile",
        code_challenge: await oidc.calculatePKCECodeChallenge(checks.verifier),
        code_challenge_method: "S256",
        state: checks.state,
        nonce: checks.nonce,
      });
      res.writeHead(302, { location: location.href, "set-cookie": `example_signin=${id}; HttpOnly; SameSite=Lax; Path=/; Max-Age=900` }).end();
    } else if (url.pathname === "/callback") {
      const checks = cookie ? pending.get(cookie) : undefined;
      if (!checks) return void res.writeHead(400, { "content-type": "text/html" }).end(page(`<p>No sign-in in progress. <a href="/login">Start again</a></p>`));
      pending.delete(cookie!);
      // Checks state and iss, exchanges the code (PKCE), validates the ID token (signature, aud, nonce, exp).
      const tokens = await oidc.authorizationCodeGrant(config, url, {
        pkceCodeVerifier: checks.verifier,
        expectedState: checks.state,
        expectedNonce: checks.nonce,
        idTokenExpected: true,
      });
      const claims = tokens.claims()!;
      const info = await oidc.fetchUserInfo(config, tokens.access_token, claims.sub);
      res
        .writeHead(200, { "content-type": "text/html" })
        .end(
          page(
            `<h1>Signed in</h1><p>Hello <b id="name">${escape(info.preferred_username)}</b>, player of <b id="game">${escape(info.game)}</b>.</p>` +
              `<p>sub: <code id="sub">${escape(claims.sub)}</code></p><p><a href="/">Home</a></p>`,
          ),
        );
    } else {
      res.writeHead(404).end("not found");
    }
  } catch (error) {
    res.writeHead(400, { "content-type": "text/html" }).end(page(`<p>Sign-in failed: ${escape((error as Error).message)}</p><p><a href="/login">Try again</a></p>`));
  }
}).listen(port, () => console.log(`example app on http://localhost:${port} (issuer ${issuer.href})`));
