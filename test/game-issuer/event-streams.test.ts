import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { solveChallenge } from "altcha-lib/v1";
import { watchesPerClientIp } from "../../core/game-oauth/watches.ts";
import { startTestOutpost, type TestOutpost } from "../support/outpost.ts";
import { signInInGame } from "../support/agent.ts";
import { seedGameOAuth, type Seeded } from "../support/game-oauth.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const redirectUri = "http://127.0.0.1:9/callback";

/** One server-sent events stream of the hosted page, read as it arrives. */
interface Stream {
  status: number;
  headers: Headers;
  /** The next event (its name and data), or undefined when the stream ended. */
  next(): Promise<{ event: string; data: Json } | undefined>;
  close(): void;
}

/**
 * The hosted page's live status (GET /oauth2/authorize/events) on a running Outpost: bounded per
 * sign-in session and per client address, so a page (or a script) cannot hold unbounded streams.
 */
describe("game issuer: the live-status streams are bounded", function () {
  this.timeout(120_000);
  let t: TestOutpost;
  let seeded: Seeded;

  before(async () => {
    t = await startTestOutpost();
    seeded = await seedGameOAuth(t.baseUrl, [redirectUri]);
  });
  after(async () => {
    await t?.close();
  });

  /** A new hosted sign-in: its session id and binding cookie. */
  async function startSignIn(): Promise<{ session: string; cookie: string; html: string }> {
    const query = new URLSearchParams({ response_type: "code", client_id: seeded.clientId, redirect_uri: redirectUri, state: "s", scope: "openid profile" });
    const page = await fetch(`${t.gameIssuerUrl}/oauth2/authorize?${query}`);
    assert.equal(page.status, 200);
    const html = await page.text();
    return { session: /data-session="([^"]+)"/.exec(html)![1], cookie: page.headers.get("set-cookie")!.split(";")[0], html };
  }

  async function open(session: string, cookie: string): Promise<Stream> {
    const abort = new AbortController();
    const res = await fetch(`${t.gameIssuerUrl}/oauth2/authorize/events?session=${session}`, { headers: { cookie }, signal: abort.signal });
    const reader = res.status === 200 ? res.body!.pipeThrough(new TextDecoderStream()).getReader() : undefined;
    let buffer = "";
    return {
      status: res.status,
      headers: res.headers,
      async next() {
        for (;;) {
          const end = buffer.indexOf("\n\n");
          if (end >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            if (block.startsWith(":")) continue; // keep-alive
            const field = (name: string) =>
              block
                .split("\n")
                .find((l) => l.startsWith(`${name}: `))
                ?.slice(name.length + 2);
            return { event: field("event") ?? "message", data: JSON.parse(field("data") ?? "null") };
          }
          const chunk = await reader!.read();
          if (chunk.done) return undefined;
          buffer += chunk.value;
        }
      },
      close: () => abort.abort(),
    };
  }

  it(`answers the ${watchesPerClientIp + 1}st concurrent stream from one address 429 with Retry-After; a closed stream frees its place`, async () => {
    const streams: Stream[] = [];
    try {
      for (let i = 0; i < watchesPerClientIp; i++) {
        const { session, cookie } = await startSignIn();
        const stream = await open(session, cookie);
        assert.equal(stream.status, 200, `stream ${i + 1}`);
        assert.equal((await stream.next())?.data.status, "pending");
        streams.push(stream);
      }
      const { session, cookie } = await startSignIn();
      const refused = await open(session, cookie);
      assert.equal(refused.status, 429);
      assert.ok(Number(refused.headers.get("retry-after")) >= 1, "Retry-After in seconds");
      assert.equal(refused.headers.get("cache-control"), "no-store");
      assert.equal(refused.headers.get("content-type"), "application/json; charset=utf-8");
      // One page goes away: its place is free again (once the server has seen the close).
      streams.shift()!.close();
      let again: Stream | undefined;
      for (let attempt = 0; attempt < 100 && again?.status !== 200; attempt++) {
        if (attempt) await new Promise((resolve) => setTimeout(resolve, 20));
        again = await open(session, cookie);
      }
      assert.equal(again!.status, 200);
      streams.push(again!);
    } finally {
      for (const s of streams) s.close();
    }
  });

  it("a second stream of the same sign-in ends the first (event replaced); the sign-in completes on the second", async () => {
    const { session, cookie, html } = await startSignIn();
    const decode = (s: string) =>
      s
        .replace(/&quot;/g, '"')
        .replace(/&#39;/g, "'")
        .replace(/&lt;/g, "<")
        .replace(/&gt;/g, ">")
        .replace(/&amp;/g, "&");
    const challenge = JSON.parse(decode(/data-challenge="([^"]+)"/.exec(html)![1]));
    const solution = await solveChallenge(challenge.challenge, challenge.salt, challenge.algorithm, challenge.maxnumber).promise;
    const verified = await fetch(`${t.gameIssuerUrl}/oauth2/authorize/verify-challenge`, {
      method: "POST",
      headers: { "content-type": "application/json", cookie },
      body: JSON.stringify({ session, payload: Buffer.from(JSON.stringify({ ...challenge, number: solution!.number })).toString("base64") }),
    });
    assert.equal(verified.status, 200);
    const { command } = (await verified.json()) as Json;

    const first = await open(session, cookie);
    assert.equal((await first.next())?.data.status, "pending");
    // Another browser cannot take it over.
    const stranger = await open(session, `outpost_game_binding=${"C".repeat(43)}`);
    assert.equal(stranger.status, 404);

    const second = await open(session, cookie);
    assert.equal(second.status, 200);
    assert.equal((await second.next())?.data.status, "pending");
    assert.deepEqual(await first.next(), { event: "replaced", data: {} });
    assert.equal(await first.next(), undefined, "the first stream ends");

    const played = await signInInGame(t.baseUrl, seeded.agentKey, { name: "Steve", uuid: randomUUID() }, command);
    assert.equal(played.code, 0, played.stdout + played.stderr);
    // First the claim (who is confirming, still pending), then the completion.
    const claimed = await second.next();
    assert.equal(claimed?.data.status, "pending");
    assert.equal(claimed?.data.claim?.player_name, "Steve");
    const done = await second.next();
    assert.equal(done?.event, "status");
    assert.equal(done?.data.status, "completed");
    const callback = new URL(done!.data.redirect_url);
    assert.equal(`${callback.origin}${callback.pathname}`, redirectUri);
    assert.ok(callback.searchParams.get("code"));
    assert.equal(await second.next(), undefined, "the stream ends with the sign-in");
  });
});
