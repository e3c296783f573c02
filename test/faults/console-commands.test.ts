/**
 * Console commands through faults: two `outpost serve` processes on one PostgreSQL database, the
 * game server's agent (the real agent library, its console a stand-in that takes 300 ms per
 * command) connected through a TCP proxy to one of them, and a script sending commands through the
 * other while the instance holding the agent's stream is killed (SIGKILL) or, later, restarted
 * (SIGTERM). Whatever the timing:
 * - every command the console got was on record first, and its caller was told it ran (200) or
 *   that it may have (504 outcome_unknown), never that the agent was offline or too slow;
 * - once the agent is back (on the other instance), every such command's record says `ran`, and
 *   every command sent to the lost stream that the console never got says `not_sent`;
 * - no command ran twice.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { createTestDatabase, onPostgresServer, type TestDatabase } from "../support/database.ts";
import { startServe, type ServeProcess } from "../support/process.ts";
import { startTcpBalancer, type Balancer } from "../support/balancer.ts";
import { accountKey } from "../support/wrapped-server.ts";
import { startAgent, PlayerAuth, type Agent } from "../../agent/client.ts";
import { Game } from "../../gen/outpost/servers/v1/resources_pb.js";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

/** What one command's caller was told. */
interface Told {
  command: string;
  status: number;
  reason?: string;
  requestId?: string;
}

onPostgresServer(() =>
  describe("faults: console commands while the instance holding the agent's stream goes away", function () {
    this.timeout(120_000);
    let database: TestDatabase;
    const dataDirs: string[] = [];
    const instances: Array<ServeProcess | undefined> = [];
    let agents: Balancer;
    let agent: Agent | undefined;
    let key: string;
    let serverId: string;
    /** Each command as the stand-in console got it, in order. */
    const ran: string[] = [];

    const live = () => instances.filter((p): p is ServeProcess => p !== undefined);
    const kek = randomBytes(32).toString("base64");
    const start = async () => {
      const dataDir = mkdtempSync(join(tmpdir(), "outpost-console-faults-"));
      dataDirs.push(dataDir);
      const serve = await startServe({ DATABASE_URL: database.url, KEY_ENCRYPTION_KEY: kek, DATA_DIR: dataDir });
      instances.push(serve);
      return serve;
    };
    const api = async (serve: ServeProcess, method: "GET" | "POST", path: string, body?: unknown) => {
      const res = await fetch(`http://127.0.0.1:${serve.port}/api/http/${path}`, {
        method,
        headers: { "x-api-key": key, ...(body ? { "content-type": "application/json" } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      return { status: res.status, body: (await res.json()) as Json };
    };

    before(async () => {
      database = await createTestDatabase();
      // One after the other: the first migrates the fresh database.
      await start();
      await start();
      // The agent's connection goes to the first instance that takes it: the first while it lives.
      agents = await startTcpBalancer(() => live().map((p) => p.port));
      const first = instances[0]!;
      key = await accountKey(`http://127.0.0.1:${first.port}`, "owner@example.com");
      assert.equal((await api(first, "POST", "organizations/createOrganization", { name: "Acme", slug: "acme" })).status, 200);
      const created = await api(first, "POST", "servers/createServer", { organizationSlug: "acme", name: "Survival", game: "minecraft" });
      serverId = created.body.server.id;
      agent = startAgent({
        url: agents.url,
        key: created.body.agentKey,
        game: Game.MINECRAFT,
        playerAuth: PlayerAuth.ONLINE,
        backoff: { initialMs: 100, maxMs: 1000 },
        console: async (command) => {
          ran.push(command);
          await sleep(300);
          return { success: true, output: [`done: ${command}`] };
        },
      });
      await agent.connected(10_000);
    });
    after(async () => {
      await agent?.stop();
      for (const serve of live()) await serve.stop();
      await agents?.close();
      await database?.drop();
      for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true });
    });

    /** Sends `count` commands through `via`, one every 60 ms, and runs `fault` after the third is sent. */
    async function commandsThrough(via: ServeProcess, label: string, count: number, fault: () => void): Promise<Told[]> {
      const calls: Array<Promise<Told>> = [];
      for (let i = 0; i < count; i++) {
        const command = `say ${label}-${i}`;
        calls.push(
          api(via, "POST", "servers/executeConsoleCommand", { serverId, command }).then(({ status, body }) => ({
            command,
            status,
            reason: body.reason,
            requestId: body.requestId ?? /request_id (\S+) tells/.exec(body.message ?? "")?.[1],
          })),
        );
        if (i === 2) fault();
        await sleep(60);
      }
      return Promise.all(calls);
    }

    /** A command's record once it is no longer pending, within 20 s of asking. */
    async function settled(via: ServeProcess, requestId: string): Promise<Json> {
      let record: Json;
      for (let i = 0; i < 100; i++) {
        const res = await api(via, "GET", `servers/getConsoleCommand?serverId=${serverId}&requestId=${requestId}`);
        assert.equal(res.status, 200, JSON.stringify(res.body));
        record = res.body.command;
        if (record.status !== "pending") return record;
        await sleep(200);
      }
      return record;
    }

    /** The promises of the file's header, for the commands of one fault. */
    async function assertKeptTrue(via: ServeProcess, told: Told[]): Promise<void> {
      for (const t of told) {
        const gotIt = ran.includes(t.command);
        if (gotIt) {
          assert.ok(t.status === 200 || (t.status === 504 && t.reason === "outcome_unknown"), `${t.command} ran, and its caller was told ${t.status} ${t.reason}`);
        } else {
          assert.ok([200, 504, 409, 503].includes(t.status) && t.status !== 200, `${t.command} never ran, and its caller was told ${t.status} ${t.reason}`);
          if (t.status === 409) assert.equal(t.reason, "agent_offline", "refused before it was sent");
        }
        if (t.status === 200 || t.status === 504) {
          assert.ok(t.requestId, `${t.command}: the caller was given its request id`);
          const record = await settled(via, t.requestId!);
          assert.equal(record.status, gotIt ? "ran" : "not_sent", `${t.command}: ${JSON.stringify(record)}`);
          if (gotIt) assert.deepEqual(record.output, [`done: ${t.command}`]);
        }
      }
      assert.equal(new Set(ran).size, ran.length, `no command ran twice: ${ran.join(", ")}`);
    }

    it("kill -9: what ran is settled as ran once the agent is back on the other instance, and nothing is called offline that ran", async () => {
      const [holding, other] = [instances[0]!, instances[1]!];
      const told = await commandsThrough(other, "killed", 8, () => {
        holding.child.kill("SIGKILL");
        instances[0] = undefined;
      });
      assert.ok(
        told.some((t) => ran.includes(t.command)),
        "some commands reached the console",
      );
      await agent!.connected(20_000);
      await assertKeptTrue(other, told);
    });

    it("SIGTERM (a rolling restart): the same", async () => {
      const fresh = await start();
      const holding = instances[1]!;
      const told = await commandsThrough(fresh, "restarted", 8, () => {
        void holding.stop();
        instances[1] = undefined;
      });
      await agent!.connected(20_000);
      await assertKeptTrue(fresh, told);
    });
  }),
);
