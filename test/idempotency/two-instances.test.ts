/**
 * Idempotency keys across instances: two `outpost serve` processes on one PostgreSQL database,
 * the game server's agent (the real agent library, its console a stand-in that records each
 * command) connected to the first, and callers sending one key through both. The key's claim is
 * in the database, so which instance a retry reaches makes no difference.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { createTestDatabase, onPostgresServer, type TestDatabase } from "../support/database.ts";
import { startServe, type ServeProcess } from "../support/process.ts";
import { accountKey } from "../support/wrapped-server.ts";
import { startAgent, PlayerAuth, type Agent } from "../../agent/client.ts";
import { Game } from "../../gen/outpost/servers/v1/resources_pb.js";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

onPostgresServer(() =>
  describe("idempotency keys across two instances", function () {
    this.timeout(90_000);
    let database: TestDatabase;
    const dataDirs: string[] = [];
    const instances: ServeProcess[] = [];
    let agent: Agent | undefined;
    let key: string;
    let serverId: string;
    /** Each command as the console got it. */
    const ran: string[] = [];

    const post = async (via: ServeProcess, path: string, body: unknown, idempotencyKey: string) => {
      const res = await fetch(`http://127.0.0.1:${via.port}/api/http/${path}`, {
        method: "POST",
        headers: { "x-api-key": key, "content-type": "application/json", "idempotency-key": idempotencyKey },
        body: JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as Json };
    };

    before(async () => {
      database = await createTestDatabase();
      const kek = randomBytes(32).toString("base64");
      // One after the other: the first migrates the fresh database. Retries wait 1 s for the first.
      for (let i = 0; i < 2; i++) {
        const dataDir = mkdtempSync(join(tmpdir(), "outpost-idempotency-"));
        dataDirs.push(dataDir);
        instances.push(await startServe({ DATABASE_URL: database.url, KEY_ENCRYPTION_KEY: kek, DATA_DIR: dataDir, IDEMPOTENCY_WAIT_MS: "1000" }));
      }
      const [a] = instances;
      key = await accountKey(`http://127.0.0.1:${a.port}`, "owner@example.com");
      assert.equal((await post(a, "organizations/createOrganization", { name: "Acme", slug: "acme" }, "setup-1")).status, 200);
      const created = await post(a, "servers/createServer", { organizationSlug: "acme", name: "Survival", game: "minecraft" }, "setup-2");
      serverId = created.body.server.id;
      agent = startAgent({
        url: `http://127.0.0.1:${a.port}`,
        key: created.body.agentKey,
        game: Game.MINECRAFT,
        playerAuth: PlayerAuth.ONLINE,
        console: async (command) => {
          ran.push(command);
          await sleep(command === "say slow" ? 2500 : 200);
          return { success: true, output: [`done: ${command}`] };
        },
      });
      await agent.connected(10_000);
    });
    after(async () => {
      await agent?.stop();
      for (const serve of instances) await serve.stop();
      await database?.drop();
      for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true });
    });

    it("runs a command once for 10 callers on both instances with one key; all get its requestId", async () => {
      const [a, b] = instances;
      const answers = await Promise.all(
        Array.from({ length: 10 }, (_, i) => post(i % 2 ? b : a, "servers/executeConsoleCommand", { serverId, command: "give Alex emerald 16" }, "order-7")),
      );
      assert.deepEqual(
        answers.map((x) => x.status),
        Array(10).fill(200),
        JSON.stringify(answers.map((x) => x.body)),
      );
      assert.deepEqual(ran, ["give Alex emerald 16"]);
      assert.equal(new Set(answers.map((x) => x.body.requestId)).size, 1);
      // The other instance knows the key too: another body is 422 there.
      const reused = await post(b, "servers/executeConsoleCommand", { serverId, command: "give Alex emerald 64" }, "order-7");
      assert.equal(reused.status, 422);
      assert.equal(reused.body.reason, "idempotency_key_reused");
      assert.deepEqual(ran, ["give Alex emerald 16"]);
    });

    it("answers a retry 409 idempotency_key_in_flight while the first still runs past the wait, then gives it the first's answer", async () => {
      const [a, b] = instances;
      const first = post(a, "servers/executeConsoleCommand", { serverId, command: "say slow" }, "slow-1");
      await sleep(200);
      const early = await post(b, "servers/executeConsoleCommand", { serverId, command: "say slow" }, "slow-1");
      assert.equal(early.status, 409);
      assert.equal(early.body.reason, "idempotency_key_in_flight");
      const answered = await first;
      assert.equal(answered.status, 200);
      const late = await post(b, "servers/executeConsoleCommand", { serverId, command: "say slow" }, "slow-1");
      assert.deepEqual(late, answered);
      assert.equal(ran.filter((c) => c === "say slow").length, 1);
    });
  }),
);
