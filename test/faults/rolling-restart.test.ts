/**
 * A rolling restart under a load of sign-ins: two `outpost serve` processes on one PostgreSQL
 * database behind reverse proxies (browsers and apps over HTTP, the game server's agent over its
 * own TCP connection), each restarted in turn with SIGTERM while players keep signing in to an app
 * through the whole Game OAuth flow. Not one sign-in fails: every one ends with the app holding
 * tokens for its player.
 *
 * The browsers here do what the hosted page does: their live status reconnects after the retry
 * hint when an instance ends it. The agent reconnects by itself and asks again what a restarting
 * instance left unanswered.
 */
import assert from "node:assert/strict";
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { solveChallenge } from "altcha-lib/v1";
import { createTestDatabase, onPostgresServer, type TestDatabase } from "../support/database.ts";
import { startServe, type ServeProcess } from "../support/process.ts";
import { freePort, seedGameOAuth, type Seeded } from "../support/game-oauth.ts";
import { startBalancer, startTcpBalancer, type Balancer } from "../support/balancer.ts";
import { startAgent, PlayerAuth, type Agent } from "../../agent/client.ts";
import { Game } from "../../gen/outpost/servers/v1/resources_pb.js";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const redirectUri = "http://127.0.0.1:9/callback";
const workers = 8;

interface Instance {
  env: Record<string, string>;
  process?: ServeProcess;
}

onPostgresServer(() =>
  describe("faults: a rolling restart of two instances during a load of sign-ins", function () {
    this.timeout(180_000);
    let database: TestDatabase;
    const dataDirs: string[] = [];
    const instances: Instance[] = [];
    let site: Balancer;
    let game: Balancer;
    let agents: Balancer;
    let seeded: Seeded;
    let agent: Agent | undefined;

    const live = () => instances.filter((i) => i.process !== undefined).map((i) => i.process!);

    before(async () => {
      database = await createTestDatabase();
      site = await startBalancer(() => live().map((p) => p.port), "in-turn");
      game = await startBalancer(() => live().map((p) => p.gamePort), "in-turn");
      agents = await startTcpBalancer(() => live().map((p) => p.port));
      const kek = randomBytes(32).toString("base64");
      for (let i = 0; i < 2; i++) {
        const dataDir = mkdtempSync(join(tmpdir(), "outpost-rolling-"));
        dataDirs.push(dataDir);
        const env = {
          DATABASE_URL: database.url,
          KEY_ENCRYPTION_KEY: kek,
          DATA_DIR: dataDir,
          PORT: String(await freePort()),
          GAME_PORT: String(await freePort()),
          GAME_ISSUER_URL: game.url,
          ACCOUNT_BASE_URL: site.url,
          TRUSTED_PROXIES: "127.0.0.1, ::1",
        };
        // One after the other: the first migrates the fresh database.
        instances.push({ env, process: await startServe(env) });
      }
      seeded = await seedGameOAuth(site.url, [redirectUri], "owner@example.com", site.url);
    });
    after(async () => {
      await agent?.stop();
      for (const instance of instances) await instance.process?.stop();
      for (const balancer of [site, game, agents]) await balancer?.close();
      await database?.drop();
      for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true });
    });

    /** The hosted page's live status, as EventSource follows it: reconnecting until it says where to go. */
    async function redirectOf(session: string, cookie: string): Promise<string> {
      for (let attempt = 0; attempt < 30; attempt++) {
        try {
          const events = await fetch(`${game.url}/oauth2/authorize/events?session=${session}`, { headers: { cookie } });
          if (events.status === 200) {
            let text = "";
            for await (const chunk of events.body!.pipeThrough(new TextDecoderStream())) {
              text += chunk;
              const redirect = /"redirect_url":"([^"]+)"/.exec(text);
              if (redirect) return JSON.parse(`"${redirect[1]}"`);
            }
          }
        } catch {
          // The connection broke: reconnect, as a browser does.
        }
        await new Promise((r) => setTimeout(r, 1000));
      }
      throw new Error("the live status never said where to go");
    }

    /** One whole sign-in, browser, player and app; throws if any step fails. */
    async function signIn(n: number): Promise<void> {
      const verifier = randomBytes(32).toString("base64url");
      const authorize = `${game.url}/oauth2/authorize?${new URLSearchParams({
        response_type: "code",
        client_id: seeded.clientId,
        redirect_uri: redirectUri,
        scope: "openid profile",
        state: `s${n}`,
        nonce: `n${n}`,
        code_challenge: createHash("sha256").update(verifier).digest("base64url"),
        code_challenge_method: "S256",
      })}`;
      const page = await fetch(authorize, { redirect: "manual" });
      assert.equal(page.status, 200, `authorize: ${page.status}`);
      const cookie = page.headers.get("set-cookie")!.split(";")[0];
      const html = await page.text();
      const session = /data-session="([^"]+)"/.exec(html)![1];
      const challenge = JSON.parse(
        /data-challenge="([^"]+)"/
          .exec(html)![1]
          .replace(/&quot;/g, '"')
          .replace(/&amp;/g, "&"),
      );
      const solution = await solveChallenge(challenge.challenge, challenge.salt, challenge.algorithm, challenge.maxnumber).promise;
      const payload = Buffer.from(JSON.stringify({ ...challenge, number: solution!.number })).toString("base64");
      const verified = await fetch(`${game.url}/oauth2/authorize/verify-challenge`, {
        method: "POST",
        headers: { "content-type": "application/json", cookie },
        body: JSON.stringify({ session, payload }),
      });
      assert.equal(verified.status, 200, `verify-challenge: ${verified.status} ${await verified.clone().text()}`);
      const { command } = (await verified.json()) as Json;
      const redirect = redirectOf(session, cookie);

      const player = { name: `Player${n}`, uuid: randomUUID() };
      const claimed = await agent!.playCommand(player, command, 30_000);
      assert.ok(claimed.confirmation, `not asked to confirm: ${claimed.message}`);
      const confirmed = await agent!.confirm(player, 30_000);
      assert.ok(confirmed.accepted, `not signed in: ${confirmed.message}`);
      const code = new URL(await redirect).searchParams.get("code")!;

      const exchanged = await fetch(`${game.url}/oauth2/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({
          grant_type: "authorization_code",
          code,
          redirect_uri: redirectUri,
          code_verifier: verifier,
          client_id: seeded.clientId,
          client_secret: seeded.clientSecret,
        }),
      });
      const tokens = (await exchanged.json()) as Json;
      assert.equal(exchanged.status, 200, `token: ${JSON.stringify(tokens)}`);
      const claims = JSON.parse(Buffer.from(tokens.id_token.split(".")[1], "base64url").toString());
      assert.equal(claims.game_account_id, player.uuid);
    }

    it("signs every player in while each instance is restarted in turn", async () => {
      agent = startAgent({ url: agents.url, key: seeded.agentKey, game: Game.MINECRAFT, playerAuth: PlayerAuth.ONLINE, backoff: { initialMs: 100, maxMs: 1000 } });
      await agent.connected(10_000);

      let loading = true;
      let started = 0;
      const done: number[] = [];
      const failures: string[] = [];
      const load = Array.from({ length: workers }, async () => {
        while (loading) {
          const n = started++;
          await signIn(n).then(
            () => done.push(n),
            (error: Error) => failures.push(`sign-in ${n}: ${error.message}`),
          );
        }
      });

      // Each instance in turn: SIGTERM, it finishes what it holds and exits, then it starts again.
      await new Promise((r) => setTimeout(r, 2000));
      for (const instance of instances) {
        // The proxies keep sending it requests: they learn it is gone when it stops accepting.
        assert.equal(await instance.process!.stop(), 0, "a clean exit");
        instance.process = undefined;
        instance.process = await startServe(instance.env);
        await new Promise((r) => setTimeout(r, 2000));
      }
      loading = false;
      await Promise.all(load);

      assert.deepEqual(failures, []);
      assert.ok(done.length >= 10, `only ${done.length} sign-ins completed`);
    });
  }),
);
