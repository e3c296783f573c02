import { randomUUID } from "node:crypto";
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createWritableIterable } from "@connectrpc/connect/protocol";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { AgentService, type ConnectRequestSchema } from "../../gen/outpost/agent/v1/agent_service_pb.js";
import { PlayerAuth } from "../../gen/outpost/servers/v1/resources_pb.js";
import { OrganizationsService } from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { ServersService } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { ActivityService } from "../../gen/outpost/activity/v1/activity_service_pb.js";
import { AuthService } from "../../gen/outpost/auth/v1/auth_service_pb.js";
import { Game } from "../../gen/outpost/servers/v1/resources_pb.js";
import { agentKeyHeader, apiKeyHeader, sessionHeader } from "../../contract/credentials.ts";
import { hashSecret } from "../../contract/secrets.ts";
import { startAgent, type Agent, type AgentEvent, type AgentOptions } from "../../agent/client.ts";
import { sweepPresence } from "../../core/agents/presence.ts";
import type { LoginAnswer, LoginAttempt } from "../../core/game-oauth/login-verifier.ts";
import { startTestCore, testConfig, type TestCore } from "../support/core.ts";
import { rejectsWith } from "../support/errors.ts";

const config = {
  ...testConfig,
  plans: { free: { servers: 50, gameOAuthClients: 2, notes: 50, assistantQueriesPerDay: 50, assistantToolActionsPerDay: 20, emailsPerHour: 30 } },
};
const steve = { name: "Steve", uuid: "123e4567-e89b-12d3-a456-426614174000" };

/**
 * The agent service in core, through the agent client over an in-process transport: what needs
 * the clock moved, a second instance on the same database, or another LoginVerifier.
 */
describe("agent service: credentials, presence, events, instances", function () {
  this.timeout(60_000);
  let t: TestCore;
  let session: string;
  const agents: Agent[] = [];
  const cores: TestCore[] = [];

  const servers = (core = t) => core.client(ServersService, { session });
  const createServer = async (name: string) => {
    const res = await servers().createServer({ organizationSlug: "acme", name, game: Game.MINECRAFT });
    return { id: res.server!.id, key: res.agentKey };
  };
  const row = async (id: string) => (await t.orm.em.fork().getConnection().execute(`select * from servers where id = ?`, [id]))[0];
  const connect = (key: string, options: Partial<AgentOptions> & { core?: TestCore } = {}, onEvent?: (event: AgentEvent) => void) => {
    const agent = startAgent(
      {
        url: "http://in-process",
        key,
        game: Game.MINECRAFT,
        playerAuth: PlayerAuth.ONLINE,
        reconnect: false,
        transport: (options.core ?? t).core.transport(),
        ...options,
      },
      onEvent,
    );
    agents.push(agent);
    return agent;
  };
  const presenceEvents = async (serverId: string) => {
    const { events } = await t.client(ActivityService, { session }).listOrganizationActivity({ organizationSlug: "acme", serverId, action: "server" });
    return events
      .filter((e) => e.action.startsWith("server.agent_"))
      .map((e) => e.action)
      .reverse();
  };
  const anotherCore = async (options: Parameters<typeof startTestCore>[1] = {}) => {
    const core = await startTestCore(config, { database: t.database, ...options });
    cores.push(core);
    return core;
  };

  before(async () => {
    t = await startTestCore(config);
    session = (await t.signUp("owner@example.com")).token;
    await t.client(OrganizationsService, { session }).createOrganization({ name: "Acme", slug: "acme" });
  });
  afterEach(async () => {
    await Promise.all(agents.splice(0).map((agent) => agent.stop()));
    // The embedded database takes four connections: each other instance goes with its test.
    for (const core of cores.splice(0)) await core.close();
  });
  after(async () => {
    await t?.close();
  });

  describe("credentials", () => {
    /** Opens the stream with exactly these headers and reads it to its end. */
    const openWith = async (headers: Record<string, string>) => {
      const setHeaders: Interceptor = (next) => (req) => {
        for (const [name, value] of Object.entries(headers)) req.header.set(name, value);
        return next(req);
      };
      const client = createClient(AgentService, t.core.transport([setHeaders]));
      const requests = createWritableIterable<{ message: { case: "hello"; value: { game: Game; playerAuth: PlayerAuth } } }>();
      void requests.write({ message: { case: "hello", value: { game: Game.MINECRAFT, playerAuth: PlayerAuth.ONLINE } } }).catch(() => {});
      requests.close();
      for await (const response of client.connect(requests)) void response;
    };

    it("takes the agent key alone: no session, no API key, not even beside a valid agent key", async () => {
      const server = await createServer("Credentials");
      const { key: apiKey } = await t.client(AuthService, { session }).createApiKey({ name: "script", expiry: { case: "expiresInDays", value: 7 } });
      await rejectsWith(openWith({}), Code.Unauthenticated, "unauthenticated");
      await rejectsWith(openWith({ [sessionHeader]: session }), Code.Unauthenticated, "unauthenticated");
      await rejectsWith(openWith({ [apiKeyHeader]: apiKey }), Code.Unauthenticated, "unauthenticated");
      await rejectsWith(openWith({ [sessionHeader]: session, [agentKeyHeader]: server.key }), Code.Unauthenticated);
      await rejectsWith(openWith({ [apiKeyHeader]: apiKey, [agentKeyHeader]: server.key }), Code.Unauthenticated);
      const asAgentKey = await rejectsWith(openWith({ [agentKeyHeader]: apiKey }), Code.Unauthenticated);
      assert.match(asAgentKey.rawMessage, /user API key/);
      await openWith({ [agentKeyHeader]: server.key });
      assert.equal((await row(server.id)).online, false, "a stream that ends goes offline");
      const read = (await servers().getServer({ serverId: server.id })).server!;
      assert.equal(read.playerAuth, PlayerAuth.ONLINE, "readers see the player-authentication mode the agent reported");
    });

    it("never lets an agent key open a user-facing service", async () => {
      const server = await createServer("Not a user");
      const client = t.client(ServersService, { headers: { [agentKeyHeader]: server.key } });
      await rejectsWith(client.listServers({ organizationSlug: "acme" }), Code.Unauthenticated, "unauthenticated");
    });
  });

  describe("the stream", () => {
    it("checks each message against the contract, and wants Hello first", async () => {
      const server = await createServer("Strict");
      const client = createClient(AgentService, t.core.transport());
      const stream = createWritableIterable<MessageInitShape<typeof ConnectRequestSchema>>();
      void stream.write({ message: { case: "hello", value: { game: Game.MINECRAFT, playerAuth: PlayerAuth.ONLINE, agentVersion: "test" } } }).catch(() => {});
      void stream.write({ message: { case: "players", value: { players: [{ name: "Steve", uuid: "not-a-uuid" }] } } }).catch(() => {});
      const readAll = async () => {
        for await (const response of client.connect(stream, { headers: { [agentKeyHeader]: server.key } })) void response;
      };
      const error = await rejectsWith(readAll(), Code.InvalidArgument);
      assert.match(error.rawMessage, /players\[0\]\.uuid/);

      // The agent library refuses such a list itself, so one odd player cannot end its stream for good.
      const agent = connect(server.key);
      await agent.connected();
      assert.throws(() => agent.setPlayers([{ name: "Steve", uuid: "not-a-uuid" }]), /"not-a-uuid" is not a UUID/);
      assert.throws(() => agent.setPlayers([{ name: "Two words", uuid: randomUUID() }]), /not a player name/);
      assert.throws(() => agent.setPlayers(Array.from({ length: 5001 }, (_, i) => ({ name: `p${i}`, uuid: randomUUID() }))), /at most 5000 players/);
      agent.setPlayers([{ name: "Steve", uuid: randomUUID() }]);
      for (let i = 0; i < 50 && (await row(server.id)).player_count !== 1; i++) await sleep(20);
      const stored = await row(server.id);
      assert.deepEqual([stored.online, stored.player_count], [true, 1], "still connected, with the good list");

      const requests = createWritableIterable<{ message: { case: "heartbeat"; value: object } }>();
      void requests.write({ message: { case: "heartbeat", value: {} } }).catch(() => {});
      const read = async () => {
        for await (const response of client.connect(requests, { headers: { [agentKeyHeader]: server.key } })) void response;
      };
      const first = await rejectsWith(read(), Code.FailedPrecondition);
      assert.match(first.rawMessage, /send Hello first/);
    });

    it("keeps the players online in this instance's memory and their count in the database", async () => {
      const server = await createServer("Crowded");
      const agent = connect(server.key);
      await agent.connected();
      agent.setPlayers([steve, { name: "Alex", uuid: "223E4567-E89B-12D3-A456-426614174000" }]);
      for (let i = 0; i < 50 && (await row(server.id)).player_count !== 2; i++) await sleep(20);
      assert.equal((await row(server.id)).player_count, 2);
      assert.deepEqual(t.agents.players(server.id), [steve, { name: "Alex", uuid: "223e4567-e89b-12d3-a456-426614174000" }]);
      await agent.stop();
      assert.equal(t.agents.players(server.id), undefined);
      assert.equal((await row(server.id)).player_count, 0);
    });

    it("a second agent with the same key takes the server over; the first stops", async () => {
      const server = await createServer("Contested");
      const first = connect(server.key);
      await first.connected();
      const second = connect(server.key);
      await second.connected();
      const error = await rejectsWith(first.stopped, Code.FailedPrecondition);
      assert.match(error.rawMessage, /another agent connected with this server's key/);
      assert.equal((await row(server.id)).online, true, "the first stream's end does not take the server offline");
      await second.stop();
      assert.equal((await row(server.id)).online, false);
    });
  });

  describe("presence events", () => {
    it("connected when an agent says Hello to a server not connected; disconnected after 60 s of silence", async () => {
      const server = await createServer("Logged");
      for (let i = 0; i < 3; i++) {
        const agent = connect(server.key);
        await agent.connected();
        await agent.stop();
      }
      assert.deepEqual(await presenceEvents(server.id), ["server.agent_connected"]);
      await sweepPresence(t.orm.em, t.clock.now());
      assert.deepEqual(await presenceEvents(server.id), ["server.agent_connected"], "a disconnect is written only after 60 s");
      t.clock.advance(61_000);
      await sweepPresence(t.orm.em, t.clock.now());
      await sweepPresence(t.orm.em, t.clock.now());
      assert.deepEqual(await presenceEvents(server.id), ["server.agent_connected", "server.agent_disconnected"], "once");
      const agent = connect(server.key);
      await agent.connected();
      assert.deepEqual(await presenceEvents(server.id), ["server.agent_connected", "server.agent_disconnected", "server.agent_connected"]);
    });

    it("the sweep takes offline a server whose instance died with its stream", async () => {
      const server = await createServer("Orphaned");
      const sql = (query: string, params: unknown[]) => t.orm.em.fork().getConnection().execute(query, params);
      const lastSeen = new Date(t.clock.now().getTime() - 45_000);
      await sql(`update servers set online = true, player_count = 3, presence_event = 'connected', last_seen_at = ? where id = ?`, [lastSeen, server.id]);
      assert.equal((await servers().getServer({ serverId: server.id })).server?.online, false, "readers already see it offline");
      await sweepPresence(t.orm.em, t.clock.now());
      assert.equal((await row(server.id)).online, false);
      assert.deepEqual(await presenceEvents(server.id), []);
      t.clock.advance(20_000);
      assert.ok((await sweepPresence(t.orm.em, t.clock.now())) >= 1);
      assert.deepEqual(await presenceEvents(server.id), ["server.agent_disconnected"]);
    });
  });

  describe("instances", () => {
    it("a stream on another instance stops at its next heartbeat when the key is regenerated", async () => {
      const server = await createServer("Far away");
      const other = await anotherCore();
      const agent = connect(server.key, { core: other, heartbeatMs: 1_000 });
      await agent.connected();
      await servers().regenerateAgentKey({ serverId: server.id });
      const error = await rejectsWith(agent.stopped, Code.Unauthenticated);
      assert.match(error.rawMessage, /the agent key no longer works/);
      assert.equal((await row(server.id)).online, false);
    });

    it("and when another agent took the server over there", async () => {
      const server = await createServer("Moved");
      const other = await anotherCore();
      const first = connect(server.key, { core: other, heartbeatMs: 1_000 });
      await first.connected();
      const second = connect(server.key);
      await second.connected();
      await rejectsWith(first.stopped, Code.FailedPrecondition);
      assert.equal((await row(server.id)).online, true);
    });

    it("shutting down ends the instance's streams with unavailable, records them offline, and refuses new ones", async () => {
      const server = await createServer("Restarted");
      const closing = await anotherCore();
      const events: AgentEvent[] = [];
      const agent = connect(server.key, { core: closing, reconnect: true, backoff: { initialMs: 50, maxMs: 100 } }, (e) => events.push(e));
      await agent.connected();
      await closing.agents.close();
      assert.equal((await row(server.id)).online, false);
      for (let i = 0; i < 100 && events.filter((e) => e.kind === "disconnected").length < 2; i++) await sleep(20);
      const drops = events.filter((e) => e.kind === "disconnected") as Array<{ error: ConnectError }>;
      assert.ok(drops.length >= 2, "it keeps trying");
      assert.ok(drops.every((e) => e.error.code === Code.Unavailable));
      assert.match(drops[0].error.rawMessage, /shutting down/);
    });
  });

  describe("the login verifier", () => {
    it("gets the server, the player and the normalized code; an accepted or claiming code is not a wrong one", async () => {
      const attempts: LoginAttempt[] = [];
      const answers: LoginAnswer[] = [];
      const confirmation = { appName: "Demo App", redirectHost: "app.example.com", expiresInSeconds: 60 };
      const core = await anotherCore({
        loginVerifier: {
          async verify(attempt) {
            attempts.push(attempt);
            if (attempt.code === "ASKS1234") return { accepted: false, message: "Confirm?", confirmation };
            return attempt.code === "GOOD1234" ? { accepted: true, message: "Signed in to Demo App." } : { accepted: false, message: "Wrong." };
          },
          async answer(answer) {
            answers.push(answer);
            return { accepted: answer.decision === "confirm", message: answer.decision };
          },
        },
      });
      const server = await createServer("Verified");
      const agent = connect(server.key, { core });
      await agent.connected();
      assert.deepEqual(await agent.playCommand(steve, "/outpost login good-1234"), { accepted: true, message: "Signed in to Demo App." });
      const organizationId = (await servers().getServer({ serverId: server.id })).server!.organizationId;
      const where = { server: { id: server.id, organizationId, name: "Verified", game: "minecraft" }, player: steve, agentKeyHash: hashSecret(server.key) };
      assert.deepEqual(attempts[0], { ...where, code: "GOOD1234" });
      for (let i = 0; i < 4; i++) assert.equal((await agent.playCommand(steve, "/outpost login BAAD-0000")).message, "Wrong.");
      assert.deepEqual(await agent.playCommand(steve, "/outpost login asks1234"), { accepted: false, message: "Confirm?", confirmation });
      assert.equal((await agent.playCommand(steve, "/outpost login GOOD-1234")).accepted, true);
      assert.equal((await agent.playCommand(steve, "/outpost login BAAD-0000")).message, "Wrong.", "five wrong codes are allowed");
      assert.match((await agent.playCommand(steve, "/outpost login GOOD-1234")).message, /too many wrong codes/, "the sixth attempt is refused before it is verified");
      assert.equal(attempts.length, 8);

      // Answers, typed or from a plugin's controls, reach the verifier as the player's decision,
      // and are no guesses: the player over the limit may still answer.
      assert.deepEqual(await agent.playCommand(steve, "/OUTPOST  Confirm"), { accepted: true, message: "confirm" });
      assert.deepEqual(await agent.playCommand(steve, "/outpost cancel"), { accepted: false, message: "cancel" });
      assert.deepEqual(await agent.confirm(steve), { accepted: true, message: "confirm" });
      assert.deepEqual(await agent.cancel(steve), { accepted: false, message: "cancel" });
      assert.deepEqual(
        answers.map((a) => a.decision),
        ["confirm", "cancel", "confirm", "cancel"],
      );
      assert.deepEqual(answers[0], { ...where, decision: "confirm" });
    });
  });
});
