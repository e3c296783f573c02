import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { solveChallenge } from "altcha-lib/v1";
import { appendQuery } from "../../edge/game-issuer/authorize.ts";
import { createBotCheck } from "../../edge/game-issuer/bot-check.ts";
import { startFakeIssuer, type FakeIssuer } from "./fake-core.ts";
import { Game, PlayerAuth } from "../../gen/outpost/servers/v1/resources_pb.js";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const cspExpected =
  "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

function authorizeQuery(overrides: Record<string, string> = {}): string {
  return new URLSearchParams({
    response_type: "code",
    client_id: "ogc_app",
    redirect_uri: "https://app.example/cb?tenant=a%20b",
    state: "st-123",
    scope: "openid profile",
    nonce: "n-1",
    code_challenge: "x".repeat(43),
    code_challenge_method: "S256",
    ...overrides,
  }).toString();
}

/** The challenge embedded in the hosted page, and the session id. */
function readPage(html: string) {
  const decode = (s: string) =>
    s
      .replace(/&quot;/g, '"')
      .replace(/&#39;/g, "'")
      .replace(/&lt;/g, "<")
      .replace(/&gt;/g, ">")
      .replace(/&amp;/g, "&");
  const session = /data-session="([^"]+)"/.exec(html)![1];
  const challenge = JSON.parse(decode(/data-challenge="([^"]+)"/.exec(html)![1]));
  return { session, challenge };
}

async function solvedPayload(challenge: { challenge: string; salt: string; algorithm: string; signature: string; maxnumber: number }) {
  const solution = await solveChallenge(challenge.challenge, challenge.salt, challenge.algorithm, challenge.maxnumber).promise;
  assert.ok(solution, "the challenge is solvable");
  return Buffer.from(JSON.stringify({ ...challenge, number: solution.number })).toString("base64");
}

describe("game issuer: authorize, the hosted page and its browser check", () => {
  let t: FakeIssuer;
  before(async () => {
    t = await startFakeIssuer();
  });
  after(async () => {
    await t?.close();
  });
  const authorize = (query: string, headers: Record<string, string> = {}) => fetch(`${t.url}/oauth2/authorize?${query}`, { redirect: "manual", headers });

  it("renders core's page_error as an HTML page (400) that names the problem, never a redirect", async () => {
    const res = await authorize(authorizeQuery({ client_id: "unknown" }));
    assert.equal(res.status, 400);
    assert.equal(res.headers.get("location"), null);
    assert.match(res.headers.get("content-type")!, /^text\/html/);
    assert.equal(res.headers.get("content-security-policy"), cspExpected);
    assert.equal(res.headers.get("x-frame-options"), "DENY");
    const html = await res.text();
    assert.match(html, /invalid_client/);
    assert.match(html, /unknown client &lt;x&gt;/, "escaped");
    assert.doesNotMatch(html, /https:\/\/app\.example/);
  });

  it("refuses a repeated client_id or redirect_uri with an error page, without asking core", async () => {
    const before = t.core.starts.length;
    const res = await authorize(`${authorizeQuery()}&redirect_uri=https%3A%2F%2Fevil.example%2F`);
    assert.equal(res.status, 400);
    assert.equal(res.headers.get("location"), null);
    assert.match(await res.text(), /redirect_uri is repeated/);
    assert.equal(t.core.starts.length, before);
  });

  it("redirects core's redirect_error (a verified organization's client) with error, error_description, state and iss, keeping the existing query", async () => {
    const res = await authorize(authorizeQuery({ response_type: "token" }));
    assert.equal(res.status, 302);
    const location = res.headers.get("location")!;
    assert.ok(location.startsWith("https://app.example/cb?tenant=a%20b&"), location);
    const url = new URL(location);
    assert.equal(url.searchParams.get("error"), "unsupported_response_type");
    assert.equal(url.searchParams.get("error_description"), "response_type must be code");
    assert.equal(url.searchParams.get("state"), "st-123");
    assert.equal(url.searchParams.get("iss"), t.url);
  });

  it("shows an unverified organization's redirect_error as a 400 page naming the destination host, with a link carrying the error, never a redirect", async () => {
    const query = authorizeQuery({ client_id: "ogc_unverified", response_type: "token", redirect_uri: "https://App.Example:8443/cb?tenant=a%20b" });
    const res = await authorize(query);
    assert.equal(res.status, 400);
    assert.equal(res.headers.get("location"), null);
    assert.equal(res.headers.get("refresh"), null);
    assert.match(res.headers.get("content-type")!, /^text\/html/);
    assert.equal(res.headers.get("referrer-policy"), "no-referrer");
    assert.equal(res.headers.get("content-security-policy"), cspExpected);
    assert.equal(res.headers.get("cache-control"), "no-store");
    const html = await res.text();
    assert.match(html, /<p class="destination" id="destination">app\.example:8443<\/p>/, "the host, prominently");
    assert.doesNotMatch(html, /<script|http-equiv/i, "no script, no meta refresh");
    const href = /<a class="button" id="continue" href="([^"]+)" rel="noreferrer">Continue to app\.example:8443<\/a>/.exec(html)?.[1];
    assert.ok(href, html);
    const expected =
      "https://App.Example:8443/cb?tenant=a%20b&" +
      new URLSearchParams({ error: "unsupported_response_type", error_description: "response_type must be code", state: "st-123", iss: t.url });
    assert.equal(href.replace(/&amp;/g, "&"), expected, "the exact redirect the error would have been");
    // A repeated parameter of such a client: the same page, saying what was repeated.
    const repeated = await authorize(`${authorizeQuery({ client_id: "ogc_unverified" })}&scope=openid`);
    assert.equal(repeated.status, 400);
    assert.equal(repeated.headers.get("location"), null);
    const link = new URL(/id="continue" href="([^"]+)"/.exec(await repeated.text())![1].replace(/&amp;/g, "&"));
    assert.equal(link.searchParams.get("error"), "invalid_request");
    assert.match(link.searchParams.get("error_description")!, /scope is repeated/);
  });

  it("redirects a repeated state (or other parameter) as invalid_request, starting no session", async () => {
    const res = await authorize(`${authorizeQuery()}&state=other`);
    assert.equal(res.status, 302);
    const url = new URL(res.headers.get("location")!);
    assert.equal(url.searchParams.get("error"), "invalid_request");
    assert.match(url.searchParams.get("error_description")!, /state/);
    assert.equal(url.searchParams.get("state"), "st-123");
    assert.equal(t.core.starts.at(-1)!.responseType, "", "core checked the client and redirect only");
  });

  it("appends to a redirect URI with and without a query", () => {
    assert.equal(appendQuery("https://a.example/cb", { code: "c", state: "s" }), "https://a.example/cb?code=c&state=s");
    assert.equal(appendQuery("https://a.example/cb?x=1", { code: "c" }), "https://a.example/cb?x=1&code=c");
    assert.equal(appendQuery("https://a.example/cb?", { code: "c" }), "https://a.example/cb?code=c");
    assert.equal(appendQuery("https://a.example/cb", { error: "e", state: "" }), "https://a.example/cb?error=e");
  });

  it("renders the hosted page with strict headers and a HttpOnly, SameSite=Lax binding cookie whose SHA-256 core receives", async () => {
    const res = await authorize(authorizeQuery());
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-security-policy"), cspExpected);
    assert.equal(res.headers.get("x-frame-options"), "DENY");
    assert.equal(res.headers.get("referrer-policy"), "no-referrer");
    assert.equal(res.headers.get("cache-control"), "no-store");
    const setCookie = res.headers.get("set-cookie")!;
    assert.match(setCookie, /^outpost_game_binding=[A-Za-z0-9_-]{43}; Path=\/; Max-Age=\d+; HttpOnly; SameSite=Lax$/);
    const secret = /=([^;]+)/.exec(setCookie)![1];
    assert.equal(t.core.starts.at(-1)!.browserBindingHash, createHash("sha256").update(secret).digest("hex"));
    const html = await res.text();
    assert.match(html, /<html lang="en">/);
    assert.match(html, /Demo &lt;App&gt;/);
    assert.match(html, /<li>Survival <span class="muted">\(Minecraft, online\)<\/span><br><span class="trust ok">Verifies players \(online mode\)<\/span><\/li>/);
    assert.match(html, /<li>Cracked <span class="muted">\(Minecraft, online\)<\/span><br><span class="trust refused">Offline mode — sign-in refused<\/span><\/li>/);
    assert.doesNotMatch(html, /K7QW-4MZX/, "the code waits for the browser check");
    assert.doesNotMatch(html, /<script>|<style|style=/, "no inline script or style");
    for (const [, path] of html.matchAll(/(?:src|href)="(\/oauth2\/assets\/[^"]+)"/g)) {
      const asset = await fetch(t.url + path.replace(/&amp;/g, "&"));
      assert.equal(asset.status, 200, path);
      assert.match(asset.headers.get("cache-control")!, /immutable/);
    }
    // The same browser keeps its cookie.
    const again = await authorize(authorizeQuery(), { cookie: `outpost_game_binding=${secret}` });
    assert.equal(again.status, 200);
    assert.equal(again.headers.get("set-cookie"), null);
    assert.equal(t.core.starts.at(-1)!.browserBindingHash, createHash("sha256").update(secret).digest("hex"));
  });

  it("says beside each server listed whether it can sign the player in, in the dashboard's words", async () => {
    const saved = t.core.servers;
    t.core.servers = [
      { id: "s1", name: "Survival", game: Game.MINECRAFT, online: true, playerAuth: PlayerAuth.ONLINE, signInAllowed: true },
      { id: "s2", name: "Network <Hub>", game: Game.MINECRAFT, online: true, playerAuth: PlayerAuth.PROXY, signInAllowed: true },
      { id: "s3", name: "Cracked", game: Game.MINECRAFT, online: false, playerAuth: PlayerAuth.OFFLINE, signInAllowed: false },
      { id: "s4", name: "Dev box", game: Game.MINECRAFT, online: true, playerAuth: PlayerAuth.OFFLINE, signInAllowed: true },
      { id: "s5", name: "New", game: Game.HYTALE, online: false, playerAuth: PlayerAuth.UNSPECIFIED, signInAllowed: false },
    ];
    try {
      const html = await (await authorize(authorizeQuery())).text();
      const items = [...html.matchAll(/<li>(.*?)<\/li>/gs)].map(([, item]) =>
        item
          .replace(/<[^>]+>/g, " ")
          .replace(/\s+/g, " ")
          .trim(),
      );
      assert.deepEqual(items, [
        "Survival (Minecraft, online) Verifies players (online mode)",
        "Network &lt;Hub&gt; (Minecraft, online) Behind an authenticating proxy",
        "Cracked (Minecraft, offline) Offline mode — sign-in refused",
        "Dev box (Minecraft, online) Offline mode — sign-in allowed for development",
        "New (Hytale, offline) Unknown until the agent connects",
      ]);
    } finally {
      t.core.servers = saved;
    }
  });

  it("sets the binding cookie Secure when the issuer is https", async () => {
    const https = await startFakeIssuer("https://issuer.example");
    try {
      const res = await fetch(`${https.url}/oauth2/authorize?${authorizeQuery()}`, { redirect: "manual" });
      assert.match(res.headers.get("set-cookie")!, /; HttpOnly; SameSite=Lax; Secure$/);
      const error = await fetch(`${https.url}/oauth2/authorize?${authorizeQuery({ response_type: "x" })}`, { redirect: "manual" });
      assert.equal(new URL(error.headers.get("location")!).searchParams.get("iss"), "https://issuer.example");
    } finally {
      await https.close();
    }
  });

  it("reveals the code only for a solved challenge of this session, to the bound browser", async () => {
    const res = await authorize(authorizeQuery());
    const cookie = res.headers.get("set-cookie")!.split(";")[0];
    const { session, challenge } = readPage(await res.text());
    const verify = (body: unknown, headers: Record<string, string> = {}) =>
      fetch(`${t.url}/oauth2/authorize/verify-challenge`, {
        method: "POST",
        headers: { "content-type": "application/json", cookie, ...headers },
        body: JSON.stringify(body),
      });
    const payload = await solvedPayload(challenge);
    const decoded = JSON.parse(Buffer.from(payload, "base64").toString());

    const wrong = await verify({ session, payload: Buffer.from(JSON.stringify({ ...decoded, number: decoded.number + 1 })).toString("base64") });
    assert.equal(wrong.status, 400);
    assert.equal(((await wrong.json()) as Json).error, "challenge_failed");
    const forged = await verify({ session, payload: Buffer.from(JSON.stringify({ ...decoded, signature: "0".repeat(64) })).toString("base64") });
    assert.equal(forged.status, 400);
    const garbage = await verify({ session, payload: "not base64 json" });
    assert.equal(garbage.status, 400);

    // Another session's solution does not open this one.
    const other = await authorize(authorizeQuery(), { cookie });
    const otherPage = readPage(await other.text());
    const otherPayload = await solvedPayload(otherPage.challenge);
    assert.equal((await verify({ session, payload: otherPayload })).status, 400);

    const crossSite = await verify({ session, payload }, { "sec-fetch-site": "cross-site" });
    assert.equal(crossSite.status, 403);
    const otherBrowser = await verify({ session, payload }, { cookie: "outpost_game_binding=" + "A".repeat(43) });
    assert.equal(otherBrowser.status, 404);

    const ok = await verify({ session, payload });
    assert.equal(ok.status, 200);
    const body = (await ok.json()) as Json;
    assert.equal(body.login_code, "K7QW-4MZX");
    assert.equal(body.command, "/outpost login K7QW-4MZX");
    assert.equal(body.status, "pending");
  });

  it("refuses an expired challenge", async () => {
    const check = createBotCheck({ maxNumber: 100, ttlMs: -1000 });
    const challenge = await check.create("s1");
    const solution = await solveChallenge(challenge.challenge, challenge.salt, challenge.algorithm, challenge.maxnumber).promise;
    assert.equal(await check.verify({ ...challenge, number: solution!.number }, "s1"), false);
    const live = createBotCheck({ maxNumber: 100 });
    const fresh = await live.create("s1");
    const solved = await solveChallenge(fresh.challenge, fresh.salt, fresh.algorithm, fresh.maxnumber).promise;
    assert.equal(await live.verify({ ...fresh, number: solved!.number }, "s1"), true);
    assert.equal(await live.verify({ ...fresh, number: solved!.number }, "s2"), false);
  });

  it("pushes the live status as server-sent events to the bound browser, ending with the redirect URL", async () => {
    const res = await authorize(authorizeQuery());
    const cookie = res.headers.get("set-cookie")!.split(";")[0];
    const { session } = readPage(await res.text());

    const unbound = await fetch(`${t.url}/oauth2/authorize/events?session=${session}`);
    assert.equal(unbound.status, 403);
    const stranger = await fetch(`${t.url}/oauth2/authorize/events?session=${session}`, { headers: { cookie: "outpost_game_binding=" + "B".repeat(43) } });
    assert.equal(stranger.status, 404);

    const events = await fetch(`${t.url}/oauth2/authorize/events?session=${session}`, { headers: { cookie } });
    assert.equal(events.status, 200);
    assert.match(events.headers.get("content-type")!, /^text\/event-stream/);
    const reader = events.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = "";
    while (!text.includes("\n\n")) text += (await reader.read()).value;
    assert.match(text, /^event: status\ndata: \{"status":"pending"/);
    t.core.complete(session, "https://app.example/cb?code=c1&state=st-123&iss=x");
    for (;;) {
      const chunk = await reader.read();
      if (chunk.done) break;
      text += chunk.value;
    }
    const last = text.trim().split("\n\n").at(-1)!;
    const data = JSON.parse(last.split("\ndata: ")[1]);
    assert.equal(data.status, "completed");
    assert.equal(data.redirect_url, "https://app.example/cb?code=c1&state=st-123&iss=x");
    assert.equal(JSON.stringify(data).includes("K7QW"), false, "the stream carries no code");
  });
});
