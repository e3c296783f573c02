import assert from "node:assert/strict";
import { randomBytes, randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pino } from "pino";
import * as oidc from "openid-client";
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, type JSONWebKeySet } from "jose";
import { loadConfig } from "../../server/config.ts";
import { startOutpost, type Outpost } from "../../server/compose.ts";
import { defaultCacheTtlMs } from "../../core/keys/signing-keys.ts";
import { TestClock } from "../support/core.ts";
import { createTestDatabase, type TestDatabase } from "../support/database.ts";
import { runCli } from "../support/process.ts";
import { signInInGame } from "../support/agent.ts";
import { freePort, openHostedPage, seedGameOAuth, type Seeded } from "../support/game-oauth.ts";

const redirectUri = "http://127.0.0.1:9/callback";

/**
 * `outpost keys rotate --issuer game` (the real command, beside a serving Outpost) in the middle of
 * a sign-in. Keys move next → current → previous and all three are published, so: a token signed
 * before the rotation and one signed after both verify against the JWKS fetched after it, and the
 * token signed after verifies against the JWKS a verifier fetched (and cached) before it.
 *
 * The serving process re-reads its keys at most every minute (another instance may have rotated),
 * so the test moves its clock past that instead of waiting.
 */
describe("game issuer: a signing-key rotation in the middle of a sign-in", function () {
  this.timeout(120_000);
  const clock = new TestClock();
  let database: TestDatabase | undefined;
  let dataDir: string;
  let outpost: Outpost;
  let env: Record<string, string>;
  let baseUrl: string;
  let issuer: string;
  let seeded: Seeded;

  before(async () => {
    database = process.env.DATABASE_URL ? await createTestDatabase() : undefined;
    dataDir = mkdtempSync(join(tmpdir(), "outpost-rotation-"));
    const gamePort = await freePort();
    issuer = `http://127.0.0.1:${gamePort}`;
    env = {
      DATA_DIR: dataDir,
      KEY_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
      ...(database ? { DATABASE_URL: database.url } : {}),
    };
    const config = loadConfig({ PORT: "0", GAME_PORT: String(gamePort), GAME_ISSUER_URL: issuer, HOST: "127.0.0.1", LOG_LEVEL: "silent", ...env });
    outpost = await startOutpost(config, pino({ level: "silent" }), clock);
    baseUrl = `http://127.0.0.1:${outpost.port}`;
    seeded = await seedGameOAuth(baseUrl, [redirectUri]);
  });
  after(async () => {
    await outpost?.stop();
    await database?.drop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  const jwks = async (): Promise<JSONWebKeySet> => (await (await fetch(`${issuer}/oauth2/jwks`)).json()) as JSONWebKeySet;
  /** The RS256 keys' kids (the client's algorithm; the other algorithms' sets rotate alike). */
  const kids = (set: JSONWebKeySet) => set.keys.filter((k) => k.alg === "RS256").map((k) => k.kid!);

  /** The RS256 kids by stage, from the command's "RS256 <stage> <kid>" lines. */
  const rsaStages = (stdout: string): Record<string, string> =>
    Object.fromEntries(
      stdout
        .split("\n")
        .filter((line) => line.startsWith("RS256 "))
        .map((line) => line.split(" ").slice(1) as [string, string]),
    );

  /** A sign-in up to the redirect back to the app (the code not exchanged yet). */
  async function codeFor(player: string): Promise<{ callback: URL; verifier: string; nonce: string }> {
    const config = await oidc.discovery(new URL(issuer), seeded.clientId, undefined, oidc.ClientSecretBasic(seeded.clientSecret), {
      execute: [oidc.allowInsecureRequests],
    });
    const verifier = oidc.randomPKCECodeVerifier();
    const nonce = oidc.randomNonce();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: "openid profile",
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
      state: "s",
      nonce,
    });
    const hosted = await openHostedPage(url);
    await hosted.opened;
    const played = await signInInGame(baseUrl, seeded.agentKey, { name: player, uuid: randomUUID() }, hosted.command);
    assert.equal(played.code, 0, played.stdout + played.stderr);
    return { callback: await hosted.redirect, verifier, nonce };
  }

  /** The exchange, as an app does it (client_secret_basic); the ID token. */
  async function exchange({ callback, verifier }: { callback: URL; verifier: string }): Promise<string> {
    const res = await fetch(`${issuer}/oauth2/token`, {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        authorization: `Basic ${Buffer.from(`${seeded.clientId}:${seeded.clientSecret}`).toString("base64")}`,
      },
      body: new URLSearchParams({ grant_type: "authorization_code", code: callback.searchParams.get("code")!, redirect_uri: redirectUri, code_verifier: verifier }),
    });
    const body = (await res.json()) as { id_token: string };
    assert.equal(res.status, 200, JSON.stringify(body));
    return body.id_token;
  }

  const verify = (token: string, set: JSONWebKeySet, nonce: string) =>
    jwtVerify(token, createLocalJWKSet(set), { issuer, audience: seeded.clientId, algorithms: ["RS256"], currentDate: clock.now() }).then(({ payload }) => {
      assert.equal(payload.nonce, nonce);
      return payload;
    });

  it("verifies tokens from before and after `outpost keys rotate --issuer game`, with the JWKS from before and after", async () => {
    // Before: a verifier fetches (and caches) the JWKS; a sign-in completes and is exchanged.
    const before = await jwks();
    assert.equal(kids(before).length, 2, "current and next, before any rotation");
    const first = await codeFor("Steve");
    const tokenBefore = await exchange(first);
    const kidBefore = decodeProtectedHeader(tokenBefore).kid!;

    // A second sign-in reaches the app; the operator rotates before the app exchanges its code.
    const second = await codeFor("Alex");
    const rotated = await runCli(["keys", "rotate", "--issuer", "game"], env);
    assert.equal(rotated.code, 0, rotated.stdout + rotated.stderr);
    const printed = rsaStages(rotated.stdout);
    assert.equal(printed.previous, kidBefore, "the key that signed before is now previous");
    assert.ok(kids(before).includes(printed.current), "the new current key was published before the rotation (as next)");
    assert.ok(!kids(before).includes(printed.next), "a new next key");

    // Within its cache time, this instance may still sign with the old key (still published); move
    // its clock past that so it signs with the new one. The code (90 s) is still good.
    clock.advance(defaultCacheTtlMs + 1_000);
    const tokenAfter = await exchange(second);
    assert.equal(decodeProtectedHeader(tokenAfter).kid, printed.current);

    const after = await jwks();
    assert.deepEqual(new Set(kids(after)), new Set([printed.previous, printed.current, printed.next]));
    // Both tokens verify against the JWKS fetched after the rotation…
    assert.equal((await verify(tokenBefore, after, first.nonce)).preferred_username, "Steve");
    assert.equal((await verify(tokenAfter, after, second.nonce)).preferred_username, "Alex");
    // …and the token signed after verifies against the JWKS fetched before it (the next key was published).
    assert.equal((await verify(tokenAfter, before, second.nonce)).preferred_username, "Alex");

    // A new sign-in after the rotation signs with the new key too.
    const third = await codeFor("Zoe");
    const tokenThird = await exchange(third);
    assert.equal(decodeProtectedHeader(tokenThird).kid, printed.current);
    await verify(tokenThird, before, third.nonce);
  });

  it("withdraws purged keys from the serving instance's JWKS within seconds of `outpost keys rotate --issuer game --purge`", async () => {
    const before = kids(await jwks());
    const purged = await runCli(["keys", "rotate", "--issuer", "game", "--purge"], env);
    assert.equal(purged.code, 0, purged.stdout + purged.stderr);
    const printed = rsaStages(purged.stdout);
    // The serving process did not purge: it learns of it by comparing kids every 2 s, not after its
    // cache's minute (this test's clock does not move).
    let served: string[] = before;
    for (let i = 0; i < 50 && served.some((kid) => before.includes(kid)); i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      served = kids(await jwks());
    }
    assert.deepEqual(new Set(served), new Set([printed.current, printed.next]));
    assert.ok(!served.some((kid) => before.includes(kid)), "no purged key is published");
  });
});
