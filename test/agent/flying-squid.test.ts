import assert from "node:assert/strict";
import { seriesOf } from "../support/stats.ts";
import type { Browser } from "playwright-core";
import * as oidc from "openid-client";
import { startTestOutpost, freePort, type TestOutpost } from "../support/outpost.ts";
import { appSignIn, seedGameOAuth, startCallbackServer, type CallbackServer, type Seeded } from "../support/game-oauth.ts";
import { launchChromium } from "../support/browser.ts";
import { joinBot, offlineUuid, startSquid, type SquidProcess, type TestBot } from "../support/flying-squid.ts";

/** Runs each cleanup step even when one before it fails. */
async function cleanUp(...steps: Array<(() => Promise<unknown>) | undefined>): Promise<void> {
  for (const step of steps) await step?.().catch(() => {});
}

/** The server "Survival" as the HTTP API lists it, once `check` holds (the agent reports asynchronously). */
async function serverWhen(seeded: Seeded, check: (server: Record<string, unknown>) => boolean): Promise<Record<string, unknown>> {
  let server: Record<string, unknown> | undefined;
  for (let attempt = 0; attempt < 100; attempt++) {
    const listed = (await seeded.api("GET", "servers/listServers?organizationSlug=acme")) as Array<Record<string, unknown>>;
    server = listed.find((s) => s.id === seeded.serverId);
    if (server && check(server)) return server;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.fail(`the server never got there: ${JSON.stringify(server)}`);
}

/**
 * The agent embedded in a real Minecraft server: flying-squid 1.21.4 in offline mode with
 * Outpost's plugin, a mineflayer player, an app signing them in with openid-client through the
 * hosted page in Chromium. The player types the commands in game and reads the answers in chat.
 */
describe("agent: the flying-squid plugin on a real Minecraft server, end to end", function () {
  this.timeout(120_000);
  let t: TestOutpost;
  let app: CallbackServer;
  let seeded: Seeded;
  let squid: SquidProcess;
  let browser: Browser;
  let steve: TestBot | undefined;

  before(async () => {
    app = await startCallbackServer();
    // An offline-mode server signs players in only where the deployment allows insecure game servers.
    t = await startTestOutpost({ ALLOW_INSECURE_GAME_SERVERS: "true" });
    seeded = await seedGameOAuth(t.baseUrl, [app.redirectUri]);
    squid = await startSquid({ OUTPOST_URL: t.baseUrl, OUTPOST_AGENT_KEY: seeded.agentKey, OUTPOST_STATS_SECONDS: "1" });
    await squid.waitFor(/\[Outpost\] connected to .*: server "Survival" of acme/);
    browser = await launchChromium();
  });
  after(() => cleanUp(steve?.quit, browser && (() => browser.close()), squid?.stop, t?.close, app?.close));

  it("signs a player in from in game: /outpost login, /outpost confirm, and the ID token names their login", async () => {
    const server = await serverWhen(seeded, (s) => s.online === true);
    assert.equal(server.playerAuth, "offline");
    assert.match(String(server.agentVersion), /flying-squid/);

    steve = await joinBot(squid.port, "Steve");
    assert.equal(steve.uuid, offlineUuid("Steve"));
    await serverWhen(seeded, (s) => s.playerCount === 1);

    // A command Outpost does not understand: its usage, in chat.
    steve.bot.chat("/outpost");
    await steve.message(/^Usage: \/outpost login <CODE>/);

    const { config, url: authorizationUrl, verifier, state, nonce } = await appSignIn(t.gameIssuerUrl, seeded, app.redirectUri);
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(authorizationUrl.href);
      const commandBox = page.getByLabel("Command to run in game");
      await commandBox.waitFor({ state: "visible", timeout: 30_000 });
      const command = await commandBox.inputValue();
      assert.match(command, /^\/outpost login [A-Z0-9]{4}-[A-Z0-9]{4}$/);

      // The player types the command; the game asks them to confirm, and the page says so.
      const host = new URL(app.redirectUri).host;
      const since = steve.messages.length;
      steve.bot.chat(command);
      const prompt = await steve.message(/Type \/outpost confirm/, since);
      assert.equal(prompt, `Sign in to Forum at ${host}? Type /outpost confirm within 60 s — only if you started this yourself.`);
      await page.getByRole("status").filter({ hasText: `Steve on Survival is confirming in game` }).waitFor();

      const callbacks = app.requests.length;
      steve.bot.chat("/outpost confirm");
      await steve.message(/^Signed in to Forum\.$/, since);
      const callback = await app.next(callbacks);
      await page.waitForURL((u) => u.pathname === "/callback" && u.origin === new URL(app.redirectUri).origin);

      const tokens = await oidc.authorizationCodeGrant(config, callback, {
        pkceCodeVerifier: verifier,
        expectedState: state,
        expectedNonce: nonce,
        idTokenExpected: true,
      });
      const claims = tokens.claims()!;
      assert.equal(claims.game, "minecraft");
      assert.equal(claims.game_account_name, "Steve");
      assert.equal(claims.game_account_id, offlineUuid("Steve"));
      assert.equal(claims.verified_by_server_id, seeded.serverId);
    } finally {
      await context.close();
    }

    // The player leaves: Outpost hears it.
    await steve.quit();
    steve = undefined;
    await serverWhen(seeded, (s) => s.playerCount === 0 && s.online === true);
  });

  it("runs console commands through Outpost on the Minecraft server's console, and lists its players", async () => {
    const server = await serverWhen(seeded, (s) => s.online === true);
    assert.equal(server.consoleAvailable, true);
    const alex = await joinBot(squid.port, "Alex");
    try {
      await serverWhen(seeded, (s) => s.playerCount === 1);
      const players = await seeded.api("GET", `servers/listPlayers?serverId=${seeded.serverId}`);
      assert.deepEqual(
        players.map((p: { name: string; uuid: string }) => [p.name, p.uuid]),
        [["Alex", offlineUuid("Alex")]],
      );
      const ran = await seeded.api("POST", "servers/executeConsoleCommand", { serverId: seeded.serverId, command: "/version" });
      assert.equal(ran.success, true);
      assert.deepEqual(ran.output, ["[INFO]: This server is running flying-squid version 1.21.4"]);
      assert.match(ran.requestId, /^[0-9a-f-]{36}$/);
      const unknown = await seeded.api("POST", "servers/executeConsoleCommand", { serverId: seeded.serverId, command: "no-such-command" });
      assert.deepEqual([unknown.success, unknown.output], [true, ["[ERROR]: Command not found"]]);
    } finally {
      await alex.quit();
    }
  });

  it("reports how the server is doing: TPS from its tick loop, MSPT, CPU and memory of its process", async () => {
    const from = new Date(Date.now() - 60_000).toISOString();
    for (let i = 0; ; i++) {
      const to = new Date(Date.now() + 60_000).toISOString();
      const answer = await seeded.api(
        "GET",
        `servers/getServerStats?serverId=${seeded.serverId}&from=${from}&to=${to}&stepSeconds=10&metrics=tps&metrics=mspt&metrics=memory&metrics=cpu`,
      );
      const series = seriesOf(answer);
      if (["tps", "mspt", "memory", "cpu"].every((m) => series[m]?.length)) {
        // A tick every 50 ms: about 20 a second on an idle server, never more.
        assert.ok(
          series.tps.every((p) => p.value > 5 && p.value <= 20),
          JSON.stringify(series.tps),
        );
        assert.ok(
          series.mspt.every((p) => p.value >= 0 && p.value < 50),
          JSON.stringify(series.mspt),
        );
        assert.ok(series.memory.every((p) => p.value > 10_000_000));
        assert.ok(series.cpu.every((p) => p.value >= 0));
        break;
      }
      assert.ok(i < 60, `no figures yet: ${JSON.stringify(answer)}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  });

  it("the server is offline in Outpost once the Minecraft server stops", async () => {
    await serverWhen(seeded, (s) => s.online === true);
    await squid.stop();
    await serverWhen(seeded, (s) => s.online === false);
  });

  it("tells the player when Outpost cannot be reached", async () => {
    const nowhere = await startSquid({ OUTPOST_URL: `http://127.0.0.1:${await freePort()}`, OUTPOST_AGENT_KEY: seeded.agentKey });
    let alex: TestBot | undefined;
    try {
      await nowhere.waitFor(/\[Outpost\] disconnected/);
      alex = await joinBot(nowhere.port, "Alex");
      alex.bot.chat("/outpost login ABCD-1234");
      await alex.message(/^Outpost cannot be reached right now\. Try again in a minute\.$/);
    } finally {
      await cleanUp(alex?.quit, nowhere.stop);
    }
  });
});
