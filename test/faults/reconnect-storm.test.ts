/**
 * A reconnect storm: 300 agents (the real agent library, each on its own HTTP/2 connection) on one
 * `outpost serve` process on PostgreSQL, which is killed (SIGKILL: no shutdown of any kind) and
 * started again on the same port. Every agent comes back by itself, none gives up, and a script
 * calling the API all the while gets answers or a refused connection, never a 5xx.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Game, PlayerAuth } from "../../gen/outpost/servers/v1/resources_pb.js";
import { startAgent, type Agent } from "../../agent/client.ts";
import { createTestDatabase, onPostgresServer, type TestDatabase } from "../support/database.ts";
import { startServe, type ServeProcess } from "../support/process.ts";
import { freePort } from "../support/outpost.ts";
import { seedGameOAuth, type Seeded } from "../support/game-oauth.ts";

const agentCount = 300;

onPostgresServer(() =>
  describe("faults: a reconnect storm after the instance is killed", function () {
    this.timeout(180_000);
    let database: TestDatabase;
    let dataDir: string;
    let serve: ServeProcess | undefined;
    let seeded: Seeded;
    let env: Record<string, string>;
    const agents: Agent[] = [];
    const connections = new Map<Agent, number>();
    const gaveUp: string[] = [];

    before(async () => {
      database = await createTestDatabase();
      dataDir = mkdtempSync(join(tmpdir(), "outpost-storm-"));
      const [port, gamePort] = [await freePort(), await freePort()];
      env = {
        DATABASE_URL: database.url,
        KEY_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
        DATA_DIR: dataDir,
        PORT: String(port),
        GAME_PORT: String(gamePort),
        GAME_ISSUER_URL: `http://127.0.0.1:${gamePort}`,
        PLANS: `{"free":{"servers":${agentCount + 10},"gameOAuthClients":2}}`,
      };
      serve = await startServe(env);
      seeded = await seedGameOAuth(`http://127.0.0.1:${port}`, ["http://127.0.0.1:1/callback"]);
    });
    after(async () => {
      await Promise.all(agents.map((a) => a.stop()));
      await serve?.stop();
      await database?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    });

    it("brings every agent back after a kill -9 and a fresh start, none giving up, no 5xx to an API caller", async () => {
      const url = `http://127.0.0.1:${env.PORT}`;
      const keys: string[] = [];
      for (let i = 0; i < agentCount; i += 25) {
        const batch = await Promise.all(
          Array.from({ length: Math.min(25, agentCount - i) }, (_, j) =>
            seeded.api("POST", "servers/createServer", { organizationSlug: "acme", name: `Storm ${i + j}`, game: "minecraft" }),
          ),
        );
        keys.push(...batch.map((created) => created.agentKey as string));
      }
      for (const key of keys) {
        const agent = startAgent(
          { url, key, game: Game.MINECRAFT, playerAuth: PlayerAuth.ONLINE, reconnect: true, backoff: { initialMs: 250, maxMs: 4_000 } },
          (event) => {
            if (event.kind === "connected") connections.set(agent, (connections.get(agent) ?? 0) + 1);
            if (event.kind === "stopped" && event.error) gaveUp.push(event.error.rawMessage);
          },
        );
        agents.push(agent);
      }
      await Promise.all(agents.map((a) => a.connected()));

      // A script calls the API all the while: an answer, or (while nothing listens) a refused connection.
      const statuses: number[] = [];
      let refused = 0;
      let polling = true;
      const poller = (async () => {
        while (polling) {
          try {
            const res = await fetch(`${url}/api/http/servers/listServers?organizationSlug=acme`, { headers: { "x-api-key": seeded.apiKey } });
            statuses.push(res.status);
            await res.arrayBuffer();
          } catch {
            refused++;
          }
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      })();

      serve!.child.kill("SIGKILL");
      await new Promise((resolve) => serve!.child.once("close", resolve));
      serve = undefined;
      const killedAt = Date.now();
      serve = await startServe(env);
      for (;;) {
        const back = agents.filter((a) => (connections.get(a) ?? 0) >= 2).length;
        if (back === agentCount) break;
        assert.ok(Date.now() - killedAt < 60_000, `${back} of ${agentCount} agents back within 60 s`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      polling = false;
      await poller;
      assert.deepEqual(gaveUp, [], "no agent gave up");
      assert.deepEqual(
        statuses.filter((s) => s >= 500),
        [],
        "no 5xx",
      );
      assert.ok(
        statuses.filter((s) => s === 200).length > 0 && refused > 0,
        `answers before and after, refusals while down (${statuses.length} answers, ${refused} refused)`,
      );
      const listed = await seeded.api("GET", "servers/listServers?organizationSlug=acme");
      assert.equal(listed.filter((s: { online: boolean }) => s.online).length, agentCount, "each server online again");
    });
  }),
);
