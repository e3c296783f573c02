/**
 * Helpers for the Game OAuth end-to-end suites: seeding an organization with a server and a client
 * through the HTTP API, a loopback redirect_uri that records its callbacks, and the hosted page
 * driven without a browser (its cookie, its challenge solved here, its live status read as
 * server-sent events), as test/game-issuer/game-issuer-flow.test.ts does it.
 */
import assert from "node:assert/strict";
import http from "node:http";
import net from "node:net";
import { solveChallenge } from "altcha-lib/v1";
import * as oidc from "openid-client";
export { freePort } from "./outpost.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

export interface Seeded {
  apiKey: string;
  agentKey: string;
  serverId: string;
  clientId: string;
  clientSecret: string;
  api(method: "GET" | "POST", path: string, body?: unknown): Promise<Json>;
}

/**
 * A user (through /sign-up), an API key, organization "acme", a Minecraft server and a client
 * "Forum". `origin` is the dashboard's (ACCOUNT_BASE_URL), which the cookie requests come from.
 */
export async function seedGameOAuth(baseUrl: string, redirectUris: string[], email = "owner@example.com", origin = "http://localhost:3000"): Promise<Seeded> {
  const signUp = await fetch(`${baseUrl}/sign-up`, {
    method: "POST",
    headers: { "content-type": "application/json", origin },
    body: JSON.stringify({ email, password: "a long password", name: "Owner" }),
  });
  assert.equal(signUp.status < 400, true, await signUp.clone().text());
  const cookie = signUp.headers.get("set-cookie")!.split(";")[0];
  const created = await fetch(`${baseUrl}/api/http/auth/createApiKey`, {
    method: "POST",
    headers: { cookie, origin, "content-type": "application/json" },
    body: JSON.stringify({ name: "tests", expiresInDays: 30 }),
  });
  const apiKey = ((await created.json()) as Json).key as string;
  const api = async (method: "GET" | "POST", path: string, body?: unknown): Promise<Json> => {
    const res = await fetch(`${baseUrl}/api/http/${path}`, {
      method,
      headers: { "x-api-key": apiKey, ...(body ? { "content-type": "application/json" } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const json = (await res.json()) as Json;
    assert.equal(res.status, 200, JSON.stringify(json));
    return json;
  };
  await api("POST", "organizations/createOrganization", { name: "Acme", slug: "acme" });
  const server = await api("POST", "servers/createServer", { organizationSlug: "acme", name: "Survival", game: "minecraft" });
  const client = await api("POST", "organizations/createGameOAuthClient", {
    organizationSlug: "acme",
    name: "Forum",
    redirectUris,
    verifierPolicy: "any_server",
  });
  return {
    apiKey,
    agentKey: server.agentKey,
    serverId: server.server.id,
    clientId: client.client.clientId,
    clientSecret: client.clientSecret,
    api,
  };
}

export interface CallbackServer {
  /** http://127.0.0.1:<port>/callback */
  redirectUri: string;
  /** Every URL requested so far, absolute. */
  requests: URL[];
  /** Resolves with the next callback request (or the first one already received after `since`). */
  next(since?: number, timeoutMs?: number): Promise<URL>;
  close(): Promise<void>;
}

/** The app's redirect_uri: a loopback server that records each request and answers 200. */
export async function startCallbackServer(): Promise<CallbackServer> {
  const requests: URL[] = [];
  const waiters = new Set<() => void>();
  const server = http.createServer((req, res) => {
    requests.push(new URL(req.url!, `http://${req.headers.host}`));
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end("<!doctype html><title>Signed in</title><h1>Back in the app</h1>");
    for (const w of waiters) w();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    redirectUri: `http://127.0.0.1:${port}/callback`,
    requests,
    next(since = 0, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const hit = requests.slice(since).find((u) => u.pathname === "/callback");
          if (hit) done(hit);
        };
        const timer = setTimeout(() => done(new Error(`no callback within ${timeoutMs} ms`)), timeoutMs);
        const done = (result: URL | Error) => {
          clearTimeout(timer);
          waiters.delete(check);
          if (result instanceof Error) reject(result);
          else resolve(result);
        };
        waiters.add(check);
        check();
      });
    },
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

export interface HostedSignIn {
  loginCode: string;
  command: string;
  /** Resolves with the redirect URL the page's live status delivers on completion. */
  redirect: Promise<URL>;
  /** The first status event, as soon as the stream is open (so the completion is not missed). */
  opened: Promise<Json>;
  /** Resolves with the first status event (since the stream opened) for which `check` holds. */
  status(check: (status: Json) => boolean): Promise<Json>;
  /** Everything the live status stream sent so far, as it came. */
  transcript(): string;
  /** Resolves once the live status stream has ended (by the server). */
  ended: Promise<void>;
}

/**
 * The hosted page without a browser: GET the authorization URL (on `pageOrigin`, which may be
 * another instance than the URL's own), solve the challenge and verify it (on `checkOrigin`,
 * which may be yet another instance), open the live status there.
 */
export async function openHostedPage(authorizationUrl: URL, pageOrigin = authorizationUrl.origin, checkOrigin = pageOrigin): Promise<HostedSignIn> {
  const url = new URL(authorizationUrl.pathname + authorizationUrl.search, pageOrigin);
  const page = await fetch(url, { redirect: "manual" });
  assert.equal(page.status, 200, await page.clone().text());
  const cookie = page.headers.get("set-cookie")!.split(";")[0];
  const html = await page.text();
  const decode = (s: string) =>
    s
      .replace(/&quot;/g, '"')
      .replace(/&#39;/g, "'")
      .replace(/&lt;/g, "<")
      .replace(/&gt;/g, ">")
      .replace(/&amp;/g, "&");
  const session = /data-session="([^"]+)"/.exec(html)![1];
  const challenge = JSON.parse(decode(/data-challenge="([^"]+)"/.exec(html)![1]));
  const solution = await solveChallenge(challenge.challenge, challenge.salt, challenge.algorithm, challenge.maxnumber).promise;
  const payload = Buffer.from(JSON.stringify({ ...challenge, number: solution!.number })).toString("base64");
  const verified = await fetch(`${checkOrigin}/oauth2/authorize/verify-challenge`, {
    method: "POST",
    headers: { "content-type": "application/json", cookie },
    body: JSON.stringify({ session, payload }),
  });
  assert.equal(verified.status, 200, await verified.clone().text());
  const { login_code: loginCode, command } = (await verified.json()) as Json;

  const events = await fetch(`${checkOrigin}/oauth2/authorize/events?session=${session}`, { headers: { cookie } });
  assert.equal(events.status, 200);
  const reader = events.body!.pipeThrough(new TextDecoderStream()).getReader();
  // Every status event so far, and whether the stream has ended.
  const statuses: Json[] = [];
  let text = "";
  let transcript = "";
  let ended: Error | undefined;
  let streamEnded!: () => void;
  const endedPromise = new Promise<void>((resolve) => (streamEnded = resolve));
  const waiters = new Set<() => void>();
  void (async () => {
    for (;;) {
      const chunk = await reader.read();
      if (chunk.done) {
        streamEnded();
        throw new Error(`the live status ended:\n${text}`);
      }
      text += chunk.value;
      transcript += chunk.value;
      const blocks = text.split("\n\n");
      text = blocks.pop()!;
      for (const block of blocks) {
        const data = block.split("\n").find((l) => l.startsWith("data: "));
        if (data && block.includes("event: status")) statuses.push(JSON.parse(data.slice("data: ".length)));
      }
      for (const wake of waiters) wake();
    }
  })().catch((error: Error) => {
    ended = error;
    for (const wake of waiters) wake();
  });
  const status = (check: (status: Json) => boolean) =>
    new Promise<Json>((resolve, reject) => {
      const look = () => {
        const hit = statuses.find(check);
        if (hit || ended) waiters.delete(look);
        if (hit) resolve(hit);
        else if (ended) reject(ended);
      };
      waiters.add(look);
      look();
    });
  const opened = status(() => true);
  const redirect = status((data) => data.status === "completed" || data.status === "expired").then((data) => {
    void reader.cancel().catch(() => {});
    if (data.status === "expired") throw new Error("the sign-in expired");
    return new URL(data.redirect_url);
  });
  redirect.catch(() => {});
  return { loginCode, command, redirect, opened, status, transcript: () => transcript, ended: endedPromise };
}

/** What an app keeps between sending the browser to the issuer and the callback. */
export interface AppSignIn {
  config: oidc.Configuration;
  url: URL;
  verifier: string;
  state: string;
  nonce: string;
}

/**
 * An app starting a Game OAuth sign-in, as openid-client does it: discovery from the issuer,
 * client_secret_basic, PKCE S256, a state and a nonce; `url` is where it sends the browser. With
 * `idTokenAlg`, the app registered that ID token algorithm and checks each ID token's signature
 * against the JWKS (openid-client's non-repudiation checks).
 */
export async function appSignIn(issuer: string, seeded: Pick<Seeded, "clientId" | "clientSecret">, redirectUri: string, idTokenAlg?: string): Promise<AppSignIn> {
  const metadata = idTokenAlg ? { id_token_signed_response_alg: idTokenAlg } : undefined;
  const config = await oidc.discovery(new URL(issuer), seeded.clientId, metadata, oidc.ClientSecretBasic(seeded.clientSecret), {
    execute: [oidc.allowInsecureRequests, ...(idTokenAlg ? [oidc.enableNonRepudiationChecks] : [])],
  });
  const verifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const nonce = oidc.randomNonce();
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri,
    scope: "openid profile",
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: "S256",
    state,
    nonce,
  });
  return { config, url, verifier, state, nonce };
}
