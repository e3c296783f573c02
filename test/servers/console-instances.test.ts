import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Code } from "@connectrpc/connect";
import { OrganizationsService } from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { ConsoleCommandStatus, ServersService } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { Game, PlayerAuth } from "../../gen/outpost/servers/v1/resources_pb.js";
import { startAgent, type Agent, type AgentOptions } from "../../agent/client.ts";
import { createTestDatabase, onPostgresServer, type TestDatabase } from "../support/database.ts";
import { startServe, type ServeProcess } from "../support/process.ts";
import { seedGameOAuth, type Seeded } from "../support/game-oauth.ts";
import { startTestCore, testConfig, type TestCore } from "../support/core.ts";
import { rejectsWith } from "../support/errors.ts";

const config = {
  ...testConfig,
  plans: { free: { servers: 50, gameOAuthClients: 2, notes: 50, assistantQueriesPerDay: 50, assistantToolActionsPerDay: 20, emailsPerHour: 30 } },
};

/**
 * Console commands across instances on one PostgreSQL database: the call enters one instance, the
 * server's agent is connected to another, and the command and its answer cross by LISTEN/NOTIFY.
 */
onPostgresServer(() =>
  describe("servers: console commands across instances (PostgreSQL)", function () {
    this.timeout(120_000);

    describe("two `outpost serve` processes", () => {
      let database: TestDatabase;
      const dataDirs: string[] = [];
      let a: ServeProcess;
      let b: ServeProcess;
      let seeded: Seeded;
      let agent: Agent | undefined;

      before(async () => {
        database = await createTestDatabase();
        const kek = randomBytes(32).toString("base64");
        const env = () => {
          const dataDir = mkdtempSync(join(tmpdir(), "outpost-console-"));
          dataDirs.push(dataDir);
          return { DATABASE_URL: database.url, KEY_ENCRYPTION_KEY: kek, DATA_DIR: dataDir };
        };
        a = await startServe(env());
        b = await startServe(env());
        seeded = await seedGameOAuth(`http://127.0.0.1:${a.port}`, ["http://127.0.0.1:9/callback"]);
      });
      after(async () => {
        await agent?.stop();
        await a?.stop();
        await b?.stop();
        await database?.drop();
        for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true });
      });

      it("runs a command sent to A's HTTP API on the agent connected to B", async () => {
        const ran: string[] = [];
        agent = startAgent({
          url: `http://127.0.0.1:${b.port}`,
          key: seeded.agentKey,
          game: Game.MINECRAFT,
          playerAuth: PlayerAuth.ONLINE,
          reconnect: false,
          console: async (command) => {
            ran.push(command);
            return { success: true, output: [`[Server thread/INFO]: ran ${command}`] };
          },
        });
        await agent.connected();
        const res = await seeded.api("POST", "servers/executeConsoleCommand", { serverId: seeded.serverId, command: "/say hi from A" });
        assert.deepEqual([res.success, res.output, res.error], [true, ["[Server thread/INFO]: ran say hi from A"], ""]);
        assert.deepEqual(ran, ["say hi from A"]);
        const { events } = await seeded.api("GET", `activity/listOrganizationActivity?organizationSlug=acme&action=server.console_command`);
        assert.deepEqual(
          events.map((e: { details: Record<string, string> }) => [e.details.command, e.details.outcome, e.details.requestId]),
          [["say hi from A", "ok", res.requestId]],
        );
      });
    });

    describe("two cores in one process, each with its own bus connection", () => {
      let a: TestCore;
      let b: TestCore;
      let session: string;
      const agents: Agent[] = [];

      const servers = (core: TestCore) => core.client(ServersService, { session });
      const createServer = async (name: string) => {
        const res = await servers(a).createServer({ organizationSlug: "acme", name, game: Game.MINECRAFT });
        return { id: res.server!.id, key: res.agentKey };
      };
      const connect = async (key: string, core: TestCore, options: Partial<AgentOptions> = {}) => {
        const agent = startAgent({
          url: "http://in-process",
          key,
          game: Game.MINECRAFT,
          playerAuth: PlayerAuth.ONLINE,
          reconnect: false,
          transport: core.core.transport(),
          ...options,
        });
        agents.push(agent);
        await agent.connected();
        return agent;
      };

      before(async () => {
        a = await startTestCore(config);
        b = await startTestCore(config, { database: a.database });
        session = (await a.signUp("owner@example.com")).token;
        await a.client(OrganizationsService, { session }).createOrganization({ name: "Acme", slug: "acme" });
      });
      afterEach(async () => {
        await Promise.all(agents.splice(0).map((agent) => agent.stop()));
      });
      after(async () => {
        await b?.close();
        await a?.close();
      });

      it("answers from B, cut to fit a notification, however long the output", async () => {
        const server = await createServer("Far");
        const lines = Array.from({ length: 200 }, (_, i) => `${i}: ${"é".repeat(4000)}`);
        await connect(server.key, b, { console: async () => ({ success: true, output: lines }) });
        const res = await servers(a).executeConsoleCommand({ serverId: server.id, command: "dump" });
        assert.equal(res.success, true);
        assert.match(res.output[0], /^\[Outpost: \d+ earlier lines cut to fit\]$/);
        assert.ok(res.output.at(-1)!.startsWith("199: "), "the newest line");
        const local = await servers(b).executeConsoleCommand({ serverId: server.id, command: "dump" });
        assert.deepEqual(local.output, res.output, "the same answer on the instance that holds the stream");
      });

      it("reads and writes a file of several MiB through the agent on B from A (the bytes cross in a row, not on the bus)", async () => {
        const server = await createServer("Files far");
        const root = mkdtempSync(join(tmpdir(), "outpost-files-far-"));
        try {
          const content = randomBytes(3 * 1024 * 1024);
          writeFileSync(join(root, "world.dat"), content);
          await connect(server.key, b, { files: { root } });
          const read = await servers(a).readFile({ serverId: server.id, path: "world.dat" });
          assert.deepEqual([read.encoding, Buffer.from(read.content, "base64").equals(content)], ["base64", true]);
          const written = await servers(a).writeFile({ serverId: server.id, path: "notes.txt", content: "é".repeat(1_000_000), expectedSha256: undefined });
          assert.equal(written.size, 2_000_000n);
          assert.equal(readFileSync(join(root, "notes.txt"), "utf8"), "é".repeat(1_000_000));
          const listed = await servers(a).listFiles({ serverId: server.id, path: "" });
          assert.deepEqual(
            listed.entries.map((e) => e.name),
            ["notes.txt", "world.dat"],
          );
          await rejectsWith(servers(a).readFile({ serverId: server.id, path: "missing" }), Code.NotFound, "not_found");
          const left = await a.orm.em.fork().getConnection().execute("select count(*)::int as n from agent_file_calls");
          assert.equal(left[0].n, 0, "each call's row is gone once answered");
        } finally {
          rmSync(root, { recursive: true, force: true });
        }
      });

      it("a slow agent on B: outcome_unknown on A, the record pending", async () => {
        const server = await createServer("Slow far");
        await connect(server.key, b, { console: () => new Promise(() => {}) });
        const error = await rejectsWith(servers(a).executeConsoleCommand({ serverId: server.id, command: "list" }), Code.DeadlineExceeded, "outcome_unknown");
        assert.match(error.rawMessage, /^the agent did not answer within 5 seconds: the command may have run/);
        const requestId = /request_id (\S+) tells/.exec(error.rawMessage)![1];
        const { command } = await servers(b).getConsoleCommand({ serverId: server.id, requestId });
        assert.deepEqual([command?.command, command?.status], ["list", ConsoleCommandStatus.PENDING]);
      });

      it("an agent that leaves B while a command from A waits: outcome_unknown at once", async () => {
        const server = await createServer("Leaving far");
        const agent: Agent = await connect(server.key, b, {
          console: () => {
            void agent.stop();
            return new Promise(() => {});
          },
        });
        const started = Date.now();
        const error = await rejectsWith(servers(a).executeConsoleCommand({ serverId: server.id, command: "stop" }), Code.DeadlineExceeded, "outcome_unknown");
        assert.match(error.rawMessage, /^the server's agent went offline before it answered: the command may have run/);
        assert.ok(Date.now() - started < 4_000, "before the timeout");
      });

      it("a stream on B that another agent took over runs nothing, even before it learns so", async () => {
        const server = await createServer("Taken over");
        const stale: string[] = [];
        const fresh: string[] = [];
        await connect(server.key, b, { heartbeatMs: 60_000, console: async (command) => (stale.push(command), { success: true, output: ["stale"] }) });
        await connect(server.key, a, { console: async (command) => (fresh.push(command), { success: true, output: ["fresh"] }) });
        for (const core of [a, b]) {
          const res = await servers(core).executeConsoleCommand({ serverId: server.id, command: "list" });
          assert.deepEqual(res.output, ["fresh"]);
        }
        assert.deepEqual([stale, fresh], [[], ["list", "list"]]);
      });
    });
  }),
);
