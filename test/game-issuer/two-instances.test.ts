import assert from "node:assert/strict";
import { randomBytes, randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as oidc from "openid-client";
import { createLocalJWKSet, jwtVerify } from "jose";
import { createTestDatabase, onPostgresServer, type TestDatabase } from "../support/database.ts";
import { startServe, type ServeProcess } from "../support/process.ts";
import { runAgent } from "../support/agent.ts";
import { freePort, openHostedPage, seedGameOAuth, type Seeded } from "../support/game-oauth.ts";

const redirectUri = "http://127.0.0.1:9/callback";

/**
 * Two `outpost serve` processes on one PostgreSQL database, as behind a load balancer: the
 * browser's side of the sign-in (the hosted page, its live status, the way back to the app) on
 * instance A, the game server's agent on instance B. The player's claim and the completion cross by
 * LISTEN/NOTIFY, the claim holds when the agent reconnects to the other instance before the player
 * confirms, and either instance exchanges the code. Both have the same public GAME_ISSUER_URL (A's,
 * standing for the balancer's) and the same KEY_ENCRYPTION_KEY, from which both key the login
 * codes' HMAC.
 */
onPostgresServer(() =>
  describe("game issuer: the browser on one instance, the agent on another (PostgreSQL)", function () {
    this.timeout(120_000);
    let database: TestDatabase;
    const dataDirs: string[] = [];
    let a: ServeProcess;
    let b: ServeProcess;
    let issuer: string;
    let aGame: string;
    let bGame: string;
    let seeded: Seeded;

    before(async () => {
      database = await createTestDatabase();
      const kek = randomBytes(32).toString("base64");
      const [aGamePort, bGamePort] = [await freePort(), await freePort()];
      issuer = `http://127.0.0.1:${aGamePort}`;
      const env = (gamePort: number) => {
        const dataDir = mkdtempSync(join(tmpdir(), "outpost-two-"));
        dataDirs.push(dataDir);
        return { DATABASE_URL: database.url, KEY_ENCRYPTION_KEY: kek, DATA_DIR: dataDir, GAME_PORT: String(gamePort), GAME_ISSUER_URL: issuer };
      };
      // One after the other: the first migrates the fresh database.
      a = await startServe(env(aGamePort));
      b = await startServe(env(bGamePort));
      aGame = `http://127.0.0.1:${aGamePort}`;
      bGame = `http://127.0.0.1:${bGamePort}`;
      seeded = await seedGameOAuth(`http://127.0.0.1:${a.port}`, [redirectUri]);
    });
    after(async () => {
      await a?.stop();
      await b?.stop();
      await database?.drop();
      for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true });
    });

    it("completes a sign-in whose page is on A and whose agent is on B; B exchanges the code", async () => {
      // The app discovers the issuer (through A) and sends the browser there.
      const auth = oidc.ClientSecretBasic(seeded.clientSecret);
      const config = await oidc.discovery(new URL(issuer), seeded.clientId, undefined, auth, { execute: [oidc.allowInsecureRequests] });
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
      assert.equal(url.origin, aGame);
      const hosted = await openHostedPage(url);
      assert.equal((await hosted.opened).status, "pending");

      // The player runs the command on a server whose agent is connected to B (B finds the code
      // A stored: both key its HMAC from the same KEK), and is asked to confirm; A's page shows who.
      const player = { name: "Alex", uuid: randomUUID() };
      const claimed = await runAgent([
        "simulate",
        "--url",
        `http://127.0.0.1:${b.port}`,
        "--key",
        seeded.agentKey,
        "--player-name",
        player.name,
        "--player-uuid",
        player.uuid,
        "--",
        hosted.command,
      ]);
      assert.equal(claimed.code, 4, claimed.stdout + claimed.stderr);
      assert.match(claimed.stdout, /^Sign in to Forum at 127\.0\.0\.1:9\? Type \/outpost confirm within 60 s/);
      const shown = await hosted.status((data) => data.claim);
      assert.deepEqual([shown.claim.player_name, shown.claim.server_name], ["Alex", "Survival"]);
      const started = performance.now();
      const played = await runAgent([
        "simulate",
        "--url",
        `http://127.0.0.1:${b.port}`,
        "--key",
        seeded.agentKey,
        "--player-name",
        player.name,
        "--player-uuid",
        player.uuid,
        "--",
        "/outpost confirm",
      ]);
      assert.equal(played.code, 0, played.stdout + played.stderr);
      // A's live status (fed by B's NOTIFY) delivers the redirect.
      const callback = await hosted.redirect;
      const crossedMs = performance.now() - started;
      assert.ok(crossedMs < 15_000, `the completion took ${crossedMs} ms to reach A`);
      assert.equal(callback.origin + callback.pathname, redirectUri);
      assert.equal(callback.searchParams.get("state"), state);
      assert.equal(callback.searchParams.get("iss"), issuer);

      // The app's next requests land on B: exchange, JWKS and userinfo there.
      const onB = new oidc.Configuration(
        {
          // The discovered metadata as plain JSON (without openid-client's helper methods).
          ...(JSON.parse(JSON.stringify(config.serverMetadata())) as oidc.ServerMetadata),
          token_endpoint: `${bGame}/oauth2/token`,
          userinfo_endpoint: `${bGame}/oauth2/userinfo`,
          jwks_uri: `${bGame}/oauth2/jwks`,
        },
        seeded.clientId,
        undefined,
        auth,
      );
      oidc.allowInsecureRequests(onB);
      oidc.enableNonRepudiationChecks(onB);
      const tokens = await oidc.authorizationCodeGrant(onB, callback, { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce, idTokenExpected: true });
      const claims = tokens.claims()!;
      assert.equal(claims.iss, issuer);
      assert.equal(claims.aud, seeded.clientId);
      assert.equal(claims.game_account_id, player.uuid);
      assert.equal(claims.verified_by_server_id, seeded.serverId);
      // Both instances publish the same keys, and the token verifies against either.
      const jwksA = await (await fetch(`${aGame}/oauth2/jwks`)).json();
      const jwksB = await (await fetch(`${bGame}/oauth2/jwks`)).json();
      assert.deepEqual(jwksA, jwksB);
      await jwtVerify(tokens.id_token!, createLocalJWKSet(jwksA as never), { issuer, audience: seeded.clientId });
      // Userinfo on both.
      for (const c of [onB, config]) {
        const info = await oidc.fetchUserInfo(c, tokens.access_token, claims.sub);
        assert.equal(info.sub, claims.sub);
        assert.equal(info.preferred_username, player.name);
      }
      // The code is spent for A too.
      const again = await fetch(`${aGame}/oauth2/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({
          grant_type: "authorization_code",
          code: callback.searchParams.get("code")!,
          redirect_uri: redirectUri,
          code_verifier: verifier,
          client_id: seeded.clientId,
          client_secret: seeded.clientSecret,
        }),
      });
      assert.equal(again.status, 400);
      assert.equal(((await again.json()) as { error: string }).error, "invalid_grant");
    });

    it("also completes the other way round: the page on B, its browser check and live status on A, the agent on A", async () => {
      const config = await oidc.discovery(new URL(issuer), seeded.clientId, undefined, oidc.ClientSecretPost(seeded.clientSecret), {
        execute: [oidc.allowInsecureRequests],
      });
      const state = oidc.randomState();
      const url = oidc.buildAuthorizationUrl(config, { redirect_uri: redirectUri, scope: "openid", state });
      // B made the proof-of-work challenge; A verifies it (both derive its HMAC key from the KEK).
      const hosted = await openHostedPage(url, bGame, aGame);
      await hosted.opened;
      // The player's code reaches A; their confirmation, after the agent reconnected to B, reaches B.
      const player = { name: "Steve", uuid: randomUUID() };
      const claimed = await runAgent([
        "simulate",
        "--url",
        `http://127.0.0.1:${a.port}`,
        "--key",
        seeded.agentKey,
        "--player-name",
        player.name,
        "--player-uuid",
        player.uuid,
        "--",
        hosted.command,
      ]);
      assert.equal(claimed.code, 4, claimed.stdout + claimed.stderr);
      const played = await runAgent([
        "simulate",
        "--url",
        `http://127.0.0.1:${b.port}`,
        "--key",
        seeded.agentKey,
        "--player-name",
        player.name,
        "--player-uuid",
        player.uuid,
        "--",
        "/outpost confirm",
      ]);
      assert.equal(played.code, 0, played.stdout + played.stderr);
      const callback = await hosted.redirect;
      assert.equal(callback.searchParams.get("state"), state);
      const tokens = await oidc.authorizationCodeGrant(config, callback, { expectedState: state, idTokenExpected: true });
      assert.equal(tokens.claims()!.preferred_username, "Steve");
    });
  }),
);
