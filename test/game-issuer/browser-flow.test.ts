import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdirSync } from "node:fs";
import { chromium, type Browser } from "playwright-core";
import * as oidc from "openid-client";
import { createLocalJWKSet, jwtVerify, decodeProtectedHeader } from "jose";
import { startTestOutpost, type TestOutpost } from "../support/outpost.ts";
import { runAgent } from "../support/agent.ts";
import { seedGameOAuth, startCallbackServer, type CallbackServer, type Seeded } from "../support/game-oauth.ts";

const chromiumPath = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const artifacts = new URL("../../.test-artifacts/", import.meta.url);

/**
 * The whole Game OAuth sign-in as a user goes through it: openid-client as the app (discovery from
 * the live issuer, PKCE S256, state, nonce), headless Chromium on the hosted page (the bot check
 * solves itself, the code and command are read from the page, the page goes back to the app by
 * itself), the real `outpost-agent simulate` as the game server, then the exchange, the ID token
 * checked against the JWKS, and userinfo.
 */
describe("game issuer: the hosted page in headless Chromium, end to end", function () {
  this.timeout(120_000);
  let t: TestOutpost;
  let app: CallbackServer;
  let seeded: Seeded;
  let browser: Browser;

  before(async () => {
    app = await startCallbackServer();
    t = await startTestOutpost();
    seeded = await seedGameOAuth(t.baseUrl, [app.redirectUri]);
    browser = await chromium.launch({
      executablePath: chromiumPath,
      args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    });
  });
  after(async () => {
    await browser?.close();
    await t?.close();
    await app?.close();
  });

  it("signs a player in: the page solves its check, shows the command, and returns to the app by itself", async () => {
    const config = await oidc.discovery(new URL(t.gameIssuerUrl), seeded.clientId, undefined, oidc.ClientSecretBasic(seeded.clientSecret), {
      execute: [oidc.allowInsecureRequests, oidc.enableNonRepudiationChecks],
    });
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const authorizationUrl = oidc.buildAuthorizationUrl(config, {
      redirect_uri: app.redirectUri,
      scope: "openid profile",
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
      state,
      nonce,
    });
    assert.equal(authorizationUrl.origin, t.gameIssuerUrl);

    const context = await browser.newContext({ viewport: { width: 1024, height: 768 } });
    const page = await context.newPage();
    const pageErrors: string[] = [];
    page.on("pageerror", (e) => pageErrors.push(String(e)));
    page.on("response", (r) => {
      // Chromium asks for /favicon.ico by itself; the issuer has none, which is fine.
      if (r.status() >= 400 && new URL(r.url()).pathname !== "/favicon.ico") pageErrors.push(`${r.status()} ${r.url()}`);
    });
    try {
      const response = (await page.goto(authorizationUrl.href))!;
      assert.equal(response.status(), 200);
      const headers = response.headers();
      const csp = headers["content-security-policy"];
      assert.ok(csp, "a Content-Security-Policy header");
      const directives = new Map(
        csp
          .split(";")
          .map((d) => d.trim().split(/\s+/))
          .map(([k, ...v]) => [k, v.join(" ")]),
      );
      assert.equal(directives.get("default-src"), "'none'");
      assert.equal(directives.get("script-src"), "'self'");
      assert.equal(directives.get("frame-ancestors"), "'none'");
      assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|\*/);
      assert.equal(headers["x-frame-options"], "DENY");
      assert.equal(headers["referrer-policy"], "no-referrer");
      assert.match(headers["cache-control"], /no-store/);
      const binding = (await context.cookies(t.gameIssuerUrl)).find((c) => c.name === "outpost_game_binding");
      assert.ok(binding, "the binding cookie");
      assert.equal(binding.httpOnly, true);
      assert.equal(binding.sameSite, "Lax");

      await page.getByRole("heading", { name: "Sign in to Forum" }).waitFor();
      // The bot check passes by itself; then the code and the command appear.
      await page.getByRole("status").filter({ hasText: "Browser check passed." }).waitFor({ timeout: 30_000 });
      const commandBox = page.getByLabel("Command to run in game");
      await commandBox.waitFor({ state: "visible" });
      const command = await commandBox.inputValue();
      const loginCode = (await page.locator("#login-code").textContent())!.trim();
      assert.match(loginCode, /^[A-Z0-9]{4}-[A-Z0-9]{4}$/);
      assert.equal(command, `/outpost login ${loginCode}`);
      await page.getByText(`Your login code is ${loginCode}.`).waitFor();
      await page.getByRole("status").filter({ hasText: "Waiting for the command on a game server" }).waitFor();
      assert.match((await page.locator("#countdown").textContent())!, /^(10:00|9:[0-5]\d)$/);

      // Small screens: no horizontal scroll at 375 px.
      await page.setViewportSize({ width: 375, height: 740 });
      const widths = await page.evaluate<{ scroll: number; client: number }>(
        "({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth })",
      );
      assert.ok(widths.scroll <= 375, `scrollWidth ${widths.scroll} > 375`);
      mkdirSync(artifacts, { recursive: true });
      await page.screenshot({ path: new URL("hosted-page.png", artifacts).pathname, fullPage: true });

      // The page tells whoever started it what the game will ask, and to confirm only their own.
      const host = new URL(app.redirectUri).host;
      const advice = (await page.locator("#confirm-advice").textContent())!.replace(/\s+/g, " ");
      assert.match(advice, new RegExp(`Sign in to Forum at ${host.replace(/\./g, "\\.")}\\?`));
      assert.match(advice, /only if you started this sign-in yourself/);

      // The player runs the command on the game server: the game asks them to confirm, and the
      // page says who is confirming where. Nothing is signed in yet.
      const since = app.requests.length;
      const player = { name: "Steve", uuid: randomUUID() };
      const simulate = (text: string) =>
        runAgent(["simulate", "--url", t.baseUrl, "--key", seeded.agentKey, "--player-name", player.name, "--player-uuid", player.uuid, "--", text]);
      const claimed = await simulate(command);
      assert.equal(claimed.code, 4, claimed.stdout + claimed.stderr);
      assert.equal(claimed.stdout, `Sign in to Forum at ${host}? Type /outpost confirm within 60 s — only if you started this yourself.\n`);
      await page
        .getByRole("status")
        .filter({ hasText: `Steve on Survival is confirming in game — sign in to Forum at ${host}.` })
        .waitFor();
      await page.screenshot({ path: new URL("hosted-page-confirming.png", artifacts).pathname, fullPage: true });
      assert.equal(app.requests.length, since, "not back in the app before the confirmation");

      // The player confirms; the page goes back to the app by itself.
      const played = await simulate("/outpost confirm");
      assert.equal(played.code, 0, played.stdout + played.stderr);
      assert.equal(played.stdout, "Signed in to Forum.\n");
      const callback = await app.next(since);
      await page.waitForURL((u) => u.origin === new URL(app.redirectUri).origin && u.pathname === "/callback", { timeout: 15_000 });
      assert.equal(new URL(page.url()).href, callback.href);
      assert.ok(callback.searchParams.get("code"));
      assert.equal(callback.searchParams.get("state"), state);
      assert.equal(callback.searchParams.get("iss"), t.gameIssuerUrl);
      assert.deepEqual(pageErrors, []);

      // The app: exchange (client_secret_basic), the ID token against the JWKS, userinfo.
      const tokens = await oidc.authorizationCodeGrant(config, callback, {
        pkceCodeVerifier: verifier,
        expectedState: state,
        expectedNonce: nonce,
        idTokenExpected: true,
      });
      assert.equal(tokens.token_type.toLowerCase(), "bearer");
      assert.equal(tokens.expires_in, 900);
      const claims = tokens.claims()!;
      assert.equal(claims.iss, t.gameIssuerUrl);
      assert.equal(claims.aud, seeded.clientId);
      assert.equal(claims.nonce, nonce);
      assert.equal(claims.game, "minecraft");
      assert.equal(claims.game_account_id, player.uuid);
      assert.equal(claims.game_account_name, player.name);
      assert.equal(claims.verified_by_server_id, seeded.serverId);
      // And independently of openid-client, with jose against the published JWKS.
      const jwks = (await (await fetch(`${t.gameIssuerUrl}/oauth2/jwks`)).json()) as Parameters<typeof createLocalJWKSet>[0];
      const { payload, protectedHeader } = await jwtVerify(tokens.id_token!, createLocalJWKSet(jwks), {
        issuer: t.gameIssuerUrl,
        audience: seeded.clientId,
        algorithms: ["RS256"],
      });
      assert.equal(payload.sub, claims.sub);
      assert.ok(jwks.keys.some((k) => k.kid === protectedHeader.kid));
      assert.equal(decodeProtectedHeader(tokens.id_token!).alg, "RS256");
      const info = await oidc.fetchUserInfo(config, tokens.access_token, claims.sub);
      assert.equal(info.sub, claims.sub);
      assert.equal(info.preferred_username, "Steve");
      assert.equal(info.game_account_id, player.uuid);
    } finally {
      await context.close();
    }
  });

  it("an unverified organization's client with a bad scope: the page names the app's host and goes there only when asked", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    try {
      const url = `${t.gameIssuerUrl}/oauth2/authorize?${new URLSearchParams({ response_type: "code", client_id: seeded.clientId, redirect_uri: app.redirectUri, state: "st-x", scope: "openid email" })}`;
      const since = app.requests.length;
      const response = (await page.goto(url))!;
      assert.equal(response.status(), 400);
      assert.equal(new URL(page.url()).origin, t.gameIssuerUrl, "no redirect");
      const host = new URL(app.redirectUri).host;
      assert.equal((await page.locator("#destination").textContent())!.trim(), host);
      assert.equal(await page.locator("script, meta[http-equiv]").count(), 0, "nothing moves the page by itself");
      assert.equal(app.requests.length, since);
      mkdirSync(artifacts, { recursive: true });
      await page.screenshot({ path: new URL("error-redirect-page.png", artifacts).pathname, fullPage: true });
      await page.getByRole("link", { name: `Continue to ${host}` }).click();
      const callback = await app.next(since);
      assert.equal(callback.searchParams.get("error"), "invalid_scope");
      assert.equal(callback.searchParams.get("state"), "st-x");
      assert.equal(callback.searchParams.get("iss"), t.gameIssuerUrl);
    } finally {
      await context.close();
    }
  });

  it("a page whose live status another stream of its sign-in took over says so and stops following", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    try {
      const url = `${t.gameIssuerUrl}/oauth2/authorize?${new URLSearchParams({ response_type: "code", client_id: seeded.clientId, redirect_uri: app.redirectUri, state: "st-r" })}`;
      // The page's own stream has begun (its headers follow core's first message, so its watch is
      // registered) before the other one opens: the status text alone can come before it.
      const pageStream = page.waitForResponse((r) => new URL(r.url()).pathname.endsWith("/oauth2/authorize/events") && r.status() === 200, { timeout: 30_000 });
      await page.goto(url);
      await page.getByRole("status").filter({ hasText: "Waiting for the command on a game server" }).waitFor({ timeout: 30_000 });
      await pageStream;
      const session = (await page.locator("#hosted").getAttribute("data-session"))!;
      const binding = (await context.cookies(t.gameIssuerUrl)).find((c) => c.name === "outpost_game_binding")!;
      const abort = new AbortController();
      const other = await fetch(`${t.gameIssuerUrl}/oauth2/authorize/events?session=${session}`, {
        headers: { cookie: `${binding.name}=${binding.value}` },
        signal: abort.signal,
      });
      try {
        assert.equal(other.status, 200);
        await page.getByRole("status").filter({ hasText: "This sign-in is being followed in another tab or window." }).waitFor();
        const reader = other.body!.pipeThrough(new TextDecoderStream()).getReader();
        assert.match((await reader.read()).value!, /^event: status\n/, "the new stream has the session");
      } finally {
        abort.abort();
      }
    } finally {
      await context.close();
    }
  });

  it("cannot be framed: Chromium refuses to show the hosted page in an iframe", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    try {
      const url = `${t.gameIssuerUrl}/oauth2/authorize?${new URLSearchParams({ response_type: "code", client_id: seeded.clientId, redirect_uri: app.redirectUri, state: "framed" })}`;
      // A page of another origin (the app's) that frames the hosted page.
      await page.route(`${new URL(app.redirectUri).origin}/framer`, (route) =>
        route.fulfill({ status: 200, contentType: "text/html", body: `<!doctype html><iframe id="f" src="${url.replace(/&/g, "&amp;")}"></iframe>` }),
      );
      await page.goto(`${new URL(app.redirectUri).origin}/framer`);
      await page.waitForTimeout(1_000);
      const frame = page.frames().find((f) => f !== page.mainFrame());
      assert.ok(frame, "the framing page has its iframe");
      const rendered = frame
        ? await frame
            .locator("#hosted")
            .count()
            .catch(() => 0)
        : 0;
      assert.equal(rendered, 0, `the hosted page rendered inside a frame (${frame?.url()})`);
    } finally {
      await context.close();
    }
  });
});
