import assert from "node:assert/strict";
import { Code, ConnectError } from "@connectrpc/connect";
import { ActivityKind, ActivityService, ActivitySeverity, type ActivityEvent } from "../../gen/outpost/activity/v1/activity_service_pb.js";
import { PlayerAuth } from "../../gen/outpost/servers/v1/resources_pb.js";
import { ServersService } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { startAgent } from "../../agent/client.ts";
import { Game } from "../../gen/outpost/servers/v1/resources_pb.js";
import { sweepPresence } from "../../core/agents/presence.ts";
import { activityClasses, activityKinds, activitySeverities } from "../../core/activity/kinds.ts";
import { activityEventPolicy, loginCodePolicies } from "../../core/ratelimit/policies.ts";
import { command, createWorld, player, type World } from "../game-oauth/fixture.ts";
import { startTestCore, testConfig, type TestCore } from "../support/core.ts";
import { IdentityService } from "../../gen/outpost/identity/v1/identity_service_pb.js";

/**
 * The events that feed alerts: every action's kind and severity, a server's agent coming and
 * going (with the real agent client), in-game sign-in refusals and lockouts, written once and
 * never flooding the log.
 */
describe("activity: kinds, severities and the events that feed alerts", function () {
  this.timeout(60_000);
  let w: World;

  const log = async (filter: { serverId?: string; action?: string } = {}) =>
    (await w.t.client(ActivityService, { session: w.session }).listOrganizationActivity({ organizationSlug: "acme", limit: 200, ...filter })).events;
  const named = (events: ActivityEvent[], action: string) => events.filter((e) => e.action === action);

  before(async () => {
    w = await createWorld();
  });
  after(async () => {
    await w?.close();
  });

  it("gives every action one kind and one severity from the one table, and each recorded event carries them", async () => {
    for (const [action, [kind, severity]] of activityClasses) {
      assert.ok((activityKinds as readonly string[]).includes(kind), action);
      assert.ok((activitySeverities as readonly string[]).includes(severity), action);
    }
    const server = await w.createServer("Classified", { connect: false });
    await w.t.client(ServersService, { session: w.session }).regenerateAgentKey({ serverId: server.id });
    const events = await log({ serverId: server.id });
    const [created] = named(events, "server.created");
    assert.deepEqual([created.kind, created.severity], [ActivityKind.CONFIGURATION, ActivitySeverity.INFO]);
    const [regenerated] = named(events, "server.agent_key_regenerated");
    assert.deepEqual([regenerated.kind, regenerated.severity, regenerated.serverId], [ActivityKind.SECURITY, ActivitySeverity.WARNING, server.id]);
    assert.equal(created.acknowledgement, undefined, "nothing is acknowledged until someone does");
  });

  it("writes agent connected (status, info) and, after the silence, disconnected (status, warning) once each, with the real agent", async () => {
    const server = await w.createServer("Flapping", { connect: false });
    const connectOnce = async () => {
      const agent = startAgent({
        url: "http://in-process",
        key: server.key,
        game: Game.MINECRAFT,
        playerAuth: PlayerAuth.ONLINE,
        reconnect: false,
        transport: w.t.core.transport(),
      });
      await agent.connected();
      await agent.stop();
    };
    for (let i = 0; i < 3; i++) await connectOnce();
    w.t.clock.advance(61_000);
    await sweepPresence(w.t.orm.em, w.t.clock.now());
    await sweepPresence(w.t.orm.em, w.t.clock.now());
    const status = (await log({ serverId: server.id })).filter((e) => e.kind === ActivityKind.STATUS).reverse();
    assert.deepEqual(
      status.map((e) => [e.action, e.severity, e.serverId]),
      [
        ["server.agent_connected", ActivitySeverity.INFO, server.id],
        ["server.agent_disconnected", ActivitySeverity.WARNING, server.id],
      ],
      "three quick reconnects are one connection",
    );
  });

  it("records an in-game sign-in refused for a wrong code, with the player and the reason, in the server's organization", async () => {
    const { id, agent } = await w.createServer("Refusing");
    const who = player("Guesser");
    const reply = await agent!.playCommand(who, "/outpost login ZZZZ-2222");
    assert.match(reply.message, /^No sign-in is waiting/);
    const [refused] = named(await log({ serverId: id }), "game_oauth.sign_in_refused");
    assert.ok(refused, "refusal recorded");
    assert.deepEqual([refused.kind, refused.severity, refused.serverId], [ActivityKind.OAUTH, ActivitySeverity.WARNING, id]);
    assert.deepEqual([refused.details.reason, refused.details.playerUuid, refused.details.playerName], ["no_sign_in_for_code", who.uuid, "Guesser"]);
    assert.equal(refused.details.message, reply.message);
  });

  it("records a refusal on an offline-mode server, and no more than the throttle allows however often it is tried", async () => {
    const { id, agent } = await w.createServer("Offline", { playerAuth: PlayerAuth.OFFLINE });
    const session = (await w.start({ clientId: (await w.createClient({ name: "Offline App" })).clientId })).session;
    const tries = activityEventPolicy.limit + 5;
    for (let i = 0; i < tries; i++) assert.match((await agent!.playCommand(player(), command(session))).message, /offline mode/);
    const refused = named(await log({ serverId: id }), "game_oauth.sign_in_refused");
    assert.equal(refused.length, activityEventPolicy.limit);
    assert.ok(refused.every((e) => e.details.reason === "insecure_server" && e.details.playerAuth === "offline"));
  });

  it("records a player's lockout by the wrong-code limit once, not each refused code after it", async () => {
    const { id, agent } = await w.createServer("Locking");
    const who = player("Hammer");
    const { limit } = loginCodePolicies.loginCodePerPlayer;
    for (let i = 0; i < limit + 4; i++) await agent!.playCommand(who, `/outpost login ZZZZ-${String(3000 + i)}`);
    const events = await log({ serverId: id });
    const lockouts = named(events, "rate_limit.locked_out");
    assert.equal(lockouts.length, 1);
    const [lockout] = lockouts;
    assert.deepEqual([lockout.kind, lockout.severity, lockout.serverId], [ActivityKind.SECURITY, ActivitySeverity.WARNING, id]);
    assert.deepEqual(
      [lockout.details.policy, lockout.details.level, lockout.details.playerUuid, lockout.details.limit],
      ["login_code_player", "player", who.uuid, String(limit)],
    );
    assert.equal(named(events, "game_oauth.sign_in_refused").length, limit, "codes refused by the limit are the lockout's, not refusals of their own");
  });
});

describe("activity: a rate limit's lockout in the platform's log", function () {
  this.timeout(60_000);
  let t: TestCore;
  before(async () => {
    t = await startTestCore({ ...testConfig, rateLimits: { ...testConfig.rateLimits, requestsPerWindow: 5, signUpsPerIp: 2 } });
  });
  after(async () => {
    await t?.close();
  });

  it("writes one rate_limit.locked_out when a credential crosses the request limit, none for the refusals after it", async () => {
    const { token } = await t.signUp("busy@example.com");
    const servers = t.client(ServersService, { session: token });
    let refused = 0;
    for (let i = 0; i < 12; i++) {
      await servers.listServers({ organizationSlug: "none" }).catch((error: unknown) => {
        if (error instanceof ConnectError && error.code === Code.ResourceExhausted) refused++;
      });
    }
    assert.ok(refused >= 6, `refused ${refused}`);
    const rows = await t.orm.em
      .fork()
      .getConnection()
      .execute(`select organization_id, kind, severity, details from activity_events where action = 'rate_limit.locked_out'`);
    assert.equal(rows.length, 1);
    const details = typeof rows[0].details === "string" ? JSON.parse(rows[0].details) : rows[0].details;
    assert.deepEqual([rows[0].organization_id, rows[0].kind, rows[0].severity, details.policy, details.credential], [null, "security", "warning", "default", "session"]);
  });

  it("writes one lockout for an address over the sign-up limit, naming the address", async () => {
    const identity = t.client(IdentityService);
    const client = { ip: "203.0.113.9" };
    for (let i = 0; i < 6; i++) {
      await identity.signUp({ email: `new${i}@example.com`, password: "a long enough password", name: "New", client }).catch(() => undefined);
    }
    const rows = await t.orm.em.fork().getConnection().execute(`select details from activity_events where action = 'rate_limit.locked_out' and target_id = 'sign_up_ip'`);
    assert.equal(rows.length, 1);
    const details = typeof rows[0].details === "string" ? JSON.parse(rows[0].details) : rows[0].details;
    assert.deepEqual([details.policy, details.ip, details.limit], ["sign_up_ip", "203.0.113.9", "2"]);
  });
});
