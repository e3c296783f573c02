/**
 * Two `outpost serve` processes on one PostgreSQL database behind a reverse proxy, and the
 * instance holding a player's browser stream is killed (SIGKILL: no shutdown of any kind) in the
 * middle of the sign-in. Headless Chromium on the hosted page reconnects its live status through
 * the proxy to the other instance, the player confirms in game, and the page goes back to the app,
 * whose code openid-client exchanges: the sign-in completes as if nothing had happened.
 */
import assert from "node:assert/strict";
import { randomBytes, randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as oidc from "openid-client";
import type { Browser } from "playwright-core";
import { createTestDatabase, onPostgresServer, type TestDatabase } from "../support/database.ts";
import { startServe, type ServeProcess } from "../support/process.ts";
import { runAgent } from "../support/agent.ts";
import { appSignIn, seedGameOAuth, startCallbackServer, type CallbackServer, type Seeded } from "../support/game-oauth.ts";
import { startBalancer, type Balancer } from "../support/balancer.ts";
import { launchChromium } from "../support/browser.ts";

onPostgresServer(() =>
  describe("faults: the instance holding the browser's stream is killed mid sign-in", function () {
    this.timeout(120_000);
    let database: TestDatabase;
    const dataDirs: string[] = [];
    let a: ServeProcess | undefined;
    let b: ServeProcess;
    let game: Balancer;
    let app: CallbackServer;
    let seeded: Seeded;
    let browser: Browser;

    before(async () => {
      database = await createTestDatabase();
      app = await startCallbackServer();
      // Every request goes to A while A lives, then to B.
      game = await startBalancer(() => [a, b].filter((s) => s !== undefined).map((s) => s.gamePort));
      const kek = randomBytes(32).toString("base64");
      const env = () => {
        const dataDir = mkdtempSync(join(tmpdir(), "outpost-killed-"));
        dataDirs.push(dataDir);
        return { DATABASE_URL: database.url, KEY_ENCRYPTION_KEY: kek, DATA_DIR: dataDir, GAME_ISSUER_URL: game.url, TRUSTED_PROXIES: "127.0.0.1, ::1" };
      };
      // One after the other: the first migrates the fresh database.
      a = await startServe(env());
      b = await startServe(env());
      seeded = await seedGameOAuth(`http://127.0.0.1:${b.port}`, [app.redirectUri]);
      browser = await launchChromium();
    });
    after(async () => {
      await browser?.close();
      await a?.stop();
      await b?.stop();
      await game?.close();
      await app?.close();
      await database?.drop();
      for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true });
    });

    it("reconnects the page to the other instance, and the sign-in completes", async () => {
      const { config, url, verifier, state, nonce } = await appSignIn(game.url, seeded, app.redirectUri);
      const context = await browser.newContext();
      const page = await context.newPage();
      const pageErrors: string[] = [];
      page.on("pageerror", (e) => pageErrors.push(String(e)));
      await page.goto(url.href);
      const commandBox = page.getByLabel("Command to run in game");
      await commandBox.waitFor({ state: "visible", timeout: 30_000 });
      const command = await commandBox.inputValue();
      await page.getByRole("status").filter({ hasText: "Waiting for the command on a game server" }).waitFor();
      const servedByA = game.served.get(a!.gamePort) ?? 0;
      assert.ok(servedByA >= 3, "A served the page, its check and its live status");
      assert.equal(game.served.get(b.gamePort) ?? 0, 0);

      // The player runs the command on a server whose agent is on B; A's stream shows the claim.
      const player = { name: "Alex", uuid: randomUUID() };
      const simulate = (text: string) =>
        runAgent(["simulate", "--url", `http://127.0.0.1:${b.port}`, "--key", seeded.agentKey, "--player-name", player.name, "--player-uuid", player.uuid, "--", text]);
      const claimed = await simulate(command);
      assert.equal(claimed.code, 4, claimed.stdout + claimed.stderr);
      await page.getByRole("status").filter({ hasText: "Alex on Survival is confirming in game" }).waitFor();

      // A dies at once, holding the page's stream.
      a!.child.kill("SIGKILL");
      await new Promise((resolve) => a!.child.once("close", resolve));
      a = undefined;

      // The page's live status comes back through the proxy, from B.
      const reconnected = Date.now();
      while ((game.served.get(b.gamePort) ?? 0) === 0) {
        assert.ok(Date.now() - reconnected < 30_000, "the page did not reconnect to B");
        await new Promise((r) => setTimeout(r, 100));
      }
      await page.getByRole("status").filter({ hasText: "Alex on Survival is confirming in game" }).waitFor();

      // The player confirms; the page, now on B, goes back to the app by itself.
      const played = await simulate("/outpost confirm");
      assert.equal(played.code, 0, played.stdout + played.stderr);
      await page.waitForURL((u) => u.origin === new URL(app.redirectUri).origin && u.pathname === "/callback", { timeout: 30_000 });
      const callback = new URL(page.url());
      assert.equal(callback.searchParams.get("state"), state);
      assert.deepEqual(pageErrors, []);

      const tokens = await oidc.authorizationCodeGrant(config, callback, {
        pkceCodeVerifier: verifier,
        expectedState: state,
        expectedNonce: nonce,
        idTokenExpected: true,
      });
      const claims = tokens.claims()!;
      assert.equal(claims.game_account_id, player.uuid);
      assert.equal(claims.iss, game.url);
      await context.close();
    });
  }),
);
