import assert from "node:assert/strict";
import { Code, createClient } from "@connectrpc/connect";
import { createWritableIterable } from "@connectrpc/connect/protocol";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { AgentService, type ConnectRequestSchema, type ConnectResponse } from "../../gen/outpost/agent/v1/agent_service_pb.js";
import { AuthService } from "../../gen/outpost/auth/v1/auth_service_pb.js";
import { IdentityService } from "../../gen/outpost/identity/v1/identity_service_pb.js";
import { OrganizationsService } from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { Role } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { ServersService, type WatchConsoleResponse } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { Game, PlayerAuth } from "../../gen/outpost/servers/v1/resources_pb.js";
import { agentKeyHeader } from "../../contract/credentials.ts";
import { startAgent, type Agent, type AgentOptions } from "../../agent/client.ts";
import { consoleWatchesPerUser as watchesPerUser } from "../../core/agents/console-router.ts";
import { acmeWithMembers, joinOrganization, type Account } from "../support/fixtures.ts";
import { startTestCore, testConfig, type TestCore } from "../support/core.ts";
import { onPostgresServer } from "../support/database.ts";
import { rejectsWith } from "../support/errors.ts";
import { allActions } from "../support/grants.ts";

const config = {
  ...testConfig,
  plans: { free: { servers: 50, gameOAuthClients: 2, notes: 50, assistantQueriesPerDay: 50, assistantToolActionsPerDay: 20, emailsPerHour: 30 } },
};

interface OpenWatch {
  /** The next message (failing the test if the stream ends first). */
  next(): Promise<WatchConsoleResponse>;
  /** Messages until their lines hold `count` lines together; returns the lines and the last presence. */
  lines(count: number): Promise<{ lines: string[]; dropped: number; online: boolean }>;
  close(): void;
}

/**
 * servers/watchConsole, the dashboard's live console: presence and recent lines first, then what
 * the agent's console prints, from whichever instance holds its stream.
 */
describe("servers: the live console", function () {
  this.timeout(60_000);
  let t: TestCore;
  let owner: Account;
  let member: Account;
  let outsider: Account;
  const agents: Agent[] = [];
  const watches: OpenWatch[] = [];
  const cores: TestCore[] = [];

  const servers = (who: Account, core = t) => core.client(ServersService, { session: who.token });
  const createServer = async (name: string) => {
    const res = await servers(owner).createServer({ organizationSlug: "acme", name, game: Game.MINECRAFT });
    return { id: res.server!.id, key: res.agentKey };
  };
  const connect = async (key: string, options: Partial<AgentOptions> & { core?: TestCore } = {}) => {
    const agent = startAgent({
      url: "http://in-process",
      key,
      game: Game.MINECRAFT,
      playerAuth: PlayerAuth.ONLINE,
      reconnect: false,
      transport: (options.core ?? t).core.transport(),
      console: async () => ({ success: true, output: [] }),
      ...options,
    });
    agents.push(agent);
    await agent.connected();
    return agent;
  };
  const openWatch = (serverId: string, who: Account | { apiKey: string } = owner, core = t): OpenWatch => {
    const abort = new AbortController();
    const client = "apiKey" in who ? core.client(ServersService, { apiKey: who.apiKey }) : servers(who, core);
    const iterator = client.watchConsole({ serverId }, { signal: abort.signal })[Symbol.asyncIterator]();
    const next = async () => {
      const { value, done } = await iterator.next();
      assert.ok(!done, "the watch ended");
      return value;
    };
    const watch: OpenWatch = {
      next,
      async lines(count) {
        const seen = { lines: [] as string[], dropped: 0, online: false };
        while (seen.lines.length < count) {
          const message = await next();
          seen.lines.push(...message.lines);
          seen.dropped += message.dropped;
          seen.online = message.online;
        }
        return seen;
      },
      close: () => abort.abort(),
    };
    watches.push(watch);
    return watch;
  };

  before(async () => {
    t = await startTestCore(config);
    ({ owner, member, outsider } = await acmeWithMembers(t));
  });
  afterEach(async () => {
    for (const watch of watches.splice(0)) watch.close();
    await Promise.all(agents.splice(0).map((agent) => agent.stop()));
    for (const core of cores.splice(0)) await core.close();
  });
  after(async () => {
    await t?.close();
  });

  it("starts with presence and the recent lines, then follows the output and the agent's comings and goings", async () => {
    const server = await createServer("Watched");
    const agent = await connect(server.key);
    agent.consoleOutput(["[INFO] Starting minecraft server", "[INFO] Done (3.2s)!"]);
    // The agent batches output for up to 100 ms: the first watch may open before it arrives.
    let first = await openWatch(server.id).next();
    for (let i = 0; first.lines.length < 2 && i < 50; i++) {
      watches.pop()!.close();
      await new Promise((resolve) => setTimeout(resolve, 20));
      first = await openWatch(server.id).next();
    }
    assert.deepEqual([first.online, first.lines, first.dropped], [true, ["[INFO] Starting minecraft server", "[INFO] Done (3.2s)!"], 0]);
    const watch = watches.at(-1)!;

    agent.consoleOutput(["[INFO] Steve joined the game"]);
    assert.deepEqual(await watch.lines(1), { lines: ["[INFO] Steve joined the game"], dropped: 0, online: true });
    await agent.stop();
    assert.deepEqual([(await watch.next()).online], [false]);
    const again = await connect(server.key);
    assert.equal((await watch.next()).online, true);
    again.consoleOutput(["[INFO] back"]);
    assert.deepEqual((await watch.lines(1)).lines, ["[INFO] back"]);
  });

  it("a server whose agent is not connected starts offline and empty", async () => {
    const server = await createServer("Idle");
    const watch = openWatch(server.id);
    assert.deepEqual(await watch.next().then((m) => [m.online, m.lines]), [false, []]);
    await connect(server.key);
    assert.equal((await watch.next()).online, true);
  });

  it("is for those who see the server, and a user has at most ten open", async () => {
    const server = await createServer("Guarded");
    await rejectsWith(openWatch(server.id, member).next(), Code.PermissionDenied, "permission_denied");
    await rejectsWith(openWatch(server.id, outsider).next(), Code.NotFound, "not_found");
    const open = Array.from({ length: watchesPerUser }, () => openWatch(server.id));
    for (const watch of open) await watch.next();
    const refused = await rejectsWith(openWatch(server.id).next(), Code.ResourceExhausted, "rate_limited");
    assert.match(refused.rawMessage, /10 live consoles open/);
    await t
      .client(OrganizationsService, { session: owner.token })
      .createAccessGrant({ organizationSlug: "acme", userId: member.userId, serverId: server.id, actions: allActions });
    assert.equal((await openWatch(server.id, member).next()).online, false, "another user has slots of their own");
    open[0].close();
    let reopened: WatchConsoleResponse | undefined;
    for (let i = 0; !reopened && i < 50; i++) {
      reopened = await openWatch(server.id)
        .next()
        .catch(() => undefined);
      if (!reopened) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.ok(reopened, "a closed console gives its slot back");
  });

  it("refuses a request its contract forbids (a server id that is not a UUID, a wrong organization field) as invalid_argument, naming the field", async () => {
    const refused = await rejectsWith(openWatch("not-a-uuid").next(), Code.InvalidArgument);
    assert.match(refused.rawMessage, /^server_id: /);
    const server = await createServer("Checked");
    const client = servers(owner);
    const iterator = client.watchConsole({ serverId: server.id, organizationId: "acme" })[Symbol.asyncIterator]();
    assert.match((await rejectsWith(iterator.next(), Code.InvalidArgument)).rawMessage, /^organization_id: /);
  });

  it("ends within seconds once its session is signed out, its API key revoked or its grant revoked, output or not", async () => {
    const server = await createServer("Left behind");
    const agent = await connect(server.key);
    const orgs = t.client(OrganizationsService, { session: owner.token });
    const admin = await t.signUp("watcher@example.com");
    await joinOrganization(t, owner, "acme", admin, Role.ADMIN);
    const { key, apiKey } = await t.client(AuthService, { session: admin.token }).createApiKey({ name: "console" });
    await orgs.createAccessGrant({ organizationSlug: "acme", userId: member.userId, serverId: server.id, actions: allActions });
    const bySession = openWatch(server.id, admin);
    const byKey = openWatch(server.id, { apiKey: key });
    const byGrant = openWatch(server.id, member);
    for (const watch of [bySession, byKey, byGrant]) assert.equal((await watch.next()).online, true);

    await t.client(AuthService, { apiKey: key }).revokeApiKey({ apiKeyId: apiKey!.id });
    await t.client(IdentityService, { session: admin.token }).signOut({});
    await orgs.revokeAccessGrant({ organizationSlug: "acme", userId: member.userId, serverId: server.id });
    // The server keeps printing: each watch ends anyway, on its next check.
    const chatter = setInterval(() => agent.consoleOutput(["[INFO] still printing"]), 200);
    try {
      const until = async (watch: OpenWatch) => {
        for (;;) await watch.next();
      };
      await Promise.all([
        rejectsWith(until(bySession), Code.Unauthenticated, "unauthenticated"),
        rejectsWith(until(byKey), Code.Unauthenticated, "unauthenticated"),
        rejectsWith(until(byGrant), Code.PermissionDenied, "permission_denied"),
      ]);
    } finally {
      clearInterval(chatter);
    }
  });

  it("the stream ends on console output the contract refuses", async () => {
    const server = await createServer("Raw");
    const client = createClient(AgentService, t.core.transport());
    const requests = createWritableIterable<MessageInitShape<typeof ConnectRequestSchema>>();
    const responses = client.connect(requests, { headers: { [agentKeyHeader]: server.key } })[Symbol.asyncIterator]();
    const next = async (): Promise<ConnectResponse> => (await responses.next()).value;
    // Not awaited: the in-process call reads its requests only once its responses are read.
    void requests.write({ message: { case: "hello", value: { game: Game.MINECRAFT, playerAuth: PlayerAuth.ONLINE, console: true } } }).catch(() => {});
    assert.equal((await next()).message.case, "welcome");
    void requests.write({ message: { case: "consoleOutput", value: { lines: [] } } }).catch(() => {});
    const error = await rejectsWith(next(), Code.InvalidArgument);
    assert.match(error.rawMessage, /lines/);
    requests.close();
  });

  onPostgresServer(() => {
    it("follows an agent connected to another instance: its recent lines, its output, its departure", async () => {
      const other = await startTestCore(config, { database: t.database });
      cores.push(other);
      const server = await createServer("Far away");
      const agent = await connect(server.key, { core: other });
      agent.consoleOutput(["[INFO] before anyone watched"]);
      await new Promise((resolve) => setTimeout(resolve, 300));
      const watch = openWatch(server.id);
      const first = await watch.next();
      assert.deepEqual([first.online, first.lines], [true, []], "the recent lines are on the other instance");
      assert.deepEqual((await watch.lines(1)).lines, ["[INFO] before anyone watched"], "which sends them when it hears of the watch");
      agent.consoleOutput(["[INFO] live 1", "[INFO] live 2"]);
      assert.deepEqual((await watch.lines(2)).lines, ["[INFO] live 1", "[INFO] live 2"]);
      await agent.stop();
      assert.equal((await watch.next()).online, false);

      // It comes back here, then there again: the watch follows.
      const near = await connect(server.key);
      assert.equal((await watch.next()).online, true);
      await near.stop();
      assert.equal((await watch.next()).online, false);
      const far = await connect(server.key, { core: other });
      assert.equal((await watch.next()).online, true);
      far.consoleOutput(["[INFO] far again"]);
      assert.deepEqual((await watch.lines(1)).lines, ["[INFO] far again"]);
    });
  });
});
