import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { Code } from "@connectrpc/connect";
import { AdminService } from "../../gen/outpost/admin/v1/admin_service_pb.js";
import { ActivityKind, ActivityService, ActivitySeverity } from "../../gen/outpost/activity/v1/activity_service_pb.js";
import { IdentityService } from "../../gen/outpost/identity/v1/identity_service_pb.js";
import { ServersService } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { OrganizationsService } from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { Role } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { allActions } from "../support/grants.ts";
import { Game } from "../../gen/outpost/servers/v1/resources_pb.js";
import { PlayerAuth, startAgent, type Agent, type AgentEvent, type AgentOptions } from "../../agent/client.ts";
import { startTestCore, type TestCore } from "../support/core.ts";
import { joinOrganization } from "../support/fixtures.ts";
import { rejectsWith } from "../support/errors.ts";
import { command, createWorld, player, playAndConfirm, type World } from "../game-oauth/fixture.ts";

const limits = { gameOAuthClients: 5, notes: 5, assistantQueriesPerDay: 5, assistantToolActionsPerDay: 5, emailsPerHour: 30 };
const plans = { free: { ...limits, servers: 3 }, small: { ...limits, servers: 2 }, large: { ...limits, servers: 4 } };
const frozenAtTwo = "this server is frozen: the organization's plan allows 2 servers; raise the plan or delete servers to unfreeze it";
const frozenInGame =
  "This server is frozen: the organization's plan allows 2 servers, so it cannot sign you in. (Server owner: raise the plan or delete servers in Outpost.)";

/**
 * An organization with more servers than its plan allows: the newest beyond the limit are frozen,
 * never deleted (listed frozen, agents refused and sent away, in-game sign-ins and the console
 * refused with the reason); raising the plan or deleting servers unfreezes the oldest first.
 */
describe("servers: frozen beyond the plan's limit", function () {
  this.timeout(60_000);
  let w: World;
  let admin: string;
  const cores: TestCore[] = [];
  const agents: Agent[] = [];

  const servers = () => w.t.client(ServersService, { session: w.session });
  const setPlan = (plan: string) => w.t.client(AdminService, { session: admin }).setOrganizationPlan({ organizationSlug: "acme", plan });
  const frozenByName = async () => Object.fromEntries((await servers().listServers({ organizationSlug: "acme" })).servers.map((s) => [s.name, s.frozen]));
  const connect = (key: string, options: Partial<AgentOptions> & { core?: TestCore } = {}) => {
    const agent = startAgent({
      url: "http://in-process",
      key,
      game: Game.MINECRAFT,
      playerAuth: PlayerAuth.ONLINE,
      reconnect: false,
      transport: (options.core ?? w.t).core.transport(),
      ...options,
    });
    agents.push(agent);
    return agent;
  };
  const freezeEvents = async () => {
    const { events } = await w.t.client(ActivityService, { session: w.session }).listOrganizationActivity({ organizationSlug: "acme", action: "server", limit: 200 });
    return events
      .filter((e) => e.action === "server.frozen" || e.action === "server.unfrozen")
      .map((e) => [e.action, e.details.name, ActivityKind[e.kind].toLowerCase(), ActivitySeverity[e.severity].toLowerCase()])
      .reverse();
  };
  /** Deletes every server of the organization, so each test starts with none. */
  const deleteAll = async () => {
    for (const s of (await servers().listServers({ organizationSlug: "acme" })).servers) await servers().deleteServer({ serverId: s.id });
  };

  before(async () => {
    w = await createWorld({ plans, defaultPlan: "free" });
    const identity = w.t.client(IdentityService);
    const email = `root-${randomUUID()}@example.com`;
    await identity.createUser({ email, password: "a long admin password", name: "Root", platformAdmin: true });
    admin = (await identity.signIn({ email, password: "a long admin password" })).sessionToken;
  });
  afterEach(async () => {
    await Promise.all(agents.splice(0).map((a) => a.stop()));
    // The embedded database takes four connections: each other instance goes with its test.
    for (const core of cores.splice(0)) await core.close();
    await setPlan("free");
    await deleteAll();
  });
  after(async () => {
    await w?.close();
  });

  it("lowering the plan freezes the newest server: listed frozen, agent sent away and refused, console refused; still editable; raising unfreezes it", async () => {
    const oldest = await w.createServer("Oldest");
    const middle = await w.createServer("Middle");
    const newest = await w.createServer("Newest");
    assert.deepEqual(await frozenByName(), { Oldest: false, Middle: false, Newest: false });

    await setPlan("small");
    assert.deepEqual(await frozenByName(), { Oldest: false, Middle: false, Newest: true });
    const { server } = await servers().getServer({ serverId: newest.id });
    assert.equal(server!.frozen, true);
    assert.equal(server!.frozenReason, frozenAtTwo);
    assert.equal((await servers().getServer({ serverId: oldest.id })).server!.frozenReason, "");
    // Its agent, connected here, is sent away at once with the reason; a new one is refused.
    const sentAway = await rejectsWith(newest.agent!.stopped, Code.FailedPrecondition, "server_frozen");
    assert.equal(sentAway.rawMessage, frozenAtTwo);
    const refused = await rejectsWith(connect(newest.key).stopped, Code.FailedPrecondition, "server_frozen");
    assert.equal(refused.rawMessage, frozenAtTwo);
    assert.equal((await servers().getServer({ serverId: newest.id })).server!.online, false);
    // The others keep working.
    assert.equal((await servers().getServer({ serverId: middle.id })).server!.online, true);

    const console = await rejectsWith(servers().executeConsoleCommand({ serverId: newest.id, command: "list" }), Code.FailedPrecondition, "server_frozen");
    assert.equal(console.rawMessage, frozenAtTwo);
    await rejectsWith(
      (async () => {
        for await (const _ of servers().watchConsole({ serverId: newest.id }));
      })(),
      Code.FailedPrecondition,
      "server_frozen",
    );
    const { events } = await w.t.client(ActivityService, { session: w.session }).listOrganizationActivity({ organizationSlug: "acme", action: "server.console_command" });
    assert.equal(events[0].details.outcome, "frozen", "the refused command is on record");

    // Still the organization's: renamed, rekeyed, listed.
    const renamed = await servers().updateServer({ serverId: newest.id, name: "Newest (renamed)" });
    assert.equal(renamed.server!.frozen, true);
    const rekeyed = await servers().regenerateAgentKey({ serverId: newest.id });
    assert.equal(rekeyed.server!.frozen, true);

    await setPlan("free");
    assert.deepEqual(await frozenByName(), { Oldest: false, Middle: false, "Newest (renamed)": false });
    const back = connect(rekeyed.agentKey);
    await back.connected();
    assert.equal((await servers().getServer({ serverId: newest.id })).server!.online, true);
    assert.deepEqual(await freezeEvents(), [
      ["server.frozen", "Newest", "status", "warning"],
      ["server.unfrozen", "Newest (renamed)", "status", "info"],
    ]);
  });

  it("an agent left to reconnect waits out the freeze, trying again slowly, and is back once the plan is raised", async () => {
    await w.createServer("Oldest");
    await w.createServer("Middle");
    const newest = await w.createServer("Newest", { connect: false });
    const events: AgentEvent[] = [];
    const agent = startAgent(
      {
        url: "http://in-process",
        key: newest.key,
        game: Game.MINECRAFT,
        playerAuth: PlayerAuth.ONLINE,
        transport: w.t.core.transport(),
        backoff: { initialMs: 20, maxMs: 300 },
      },
      (e) => events.push(e),
    );
    agents.push(agent);
    await agent.connected();
    await setPlan("small");
    for (let i = 0; i < 100 && events.filter((e) => e.kind === "disconnected").length < 2; i++) await sleep(50);
    const waits = events.filter((e): e is Extract<AgentEvent, { kind: "disconnected" }> => e.kind === "disconnected");
    assert.ok(waits.length >= 2, "sent away, then refused again: it keeps trying");
    for (const wait of waits)
      assert.deepEqual([Code[wait.error.code], wait.error.rawMessage, wait.retryInMs], ["FailedPrecondition", frozenAtTwo, 300], "at the slowest pace");
    assert.equal(
      events.some((e) => e.kind === "stopped"),
      false,
      "a freeze does not stop it",
    );
    await setPlan("free");
    await agent.connected(5_000);
    assert.equal((await servers().getServer({ serverId: newest.id })).server!.online, true);
  });

  it("a member's refused console on a frozen server spends none of their grant's uses", async () => {
    await w.createServer("Oldest");
    await w.createServer("Middle");
    const newest = await w.createServer("Newest");
    const member = await w.t.signUp(`member-${randomUUID()}@example.com`);
    const orgs = w.t.client(OrganizationsService, { session: w.session });
    await joinOrganization(w.t, { token: w.session }, "acme", member, Role.MEMBER);
    await orgs.createAccessGrant({ organizationSlug: "acme", userId: member.userId, serverId: newest.id, actions: allActions, constraints: { maxUses: 2 } });
    await setPlan("small");
    const theirs = w.t.client(ServersService, { session: member.token });
    for (let i = 0; i < 3; i++) await rejectsWith(theirs.executeConsoleCommand({ serverId: newest.id, command: "list" }), Code.FailedPrecondition, "server_frozen");
    await rejectsWith(
      (async () => {
        for await (const _ of theirs.watchConsole({ serverId: newest.id }));
      })(),
      Code.FailedPrecondition,
      "server_frozen",
    );
    const [grant] = (await w.t.client(OrganizationsService, { session: member.token }).getCurrentMember({ organizationSlug: "acme" })).accessGrants;
    assert.equal(grant.uses, 0, "the grant still has both its uses for when the server is unfrozen");
    const { events } = await w.t.client(ActivityService, { session: w.session }).listOrganizationActivity({ organizationSlug: "acme", action: "server.console_command" });
    assert.deepEqual(
      events.slice(0, 3).map((e) => e.details.outcome),
      ["frozen", "frozen", "frozen"],
    );
  });

  it("deleting an older server unfreezes the oldest frozen one first", async () => {
    await setPlan("large");
    const servers4 = [];
    for (const name of ["A", "B", "C", "D"]) servers4.push(await w.createServer(name, { connect: false }));
    await setPlan("small");
    assert.deepEqual(await frozenByName(), { A: false, B: false, C: true, D: true });
    const before = (await freezeEvents()).length;
    await servers().deleteServer({ serverId: servers4[0].id });
    assert.deepEqual(await frozenByName(), { B: false, C: false, D: true });
    assert.deepEqual((await freezeEvents()).slice(before), [["server.unfrozen", "C", "status", "info"]]);
    // Deleting a frozen server unfreezes nothing.
    await servers().deleteServer({ serverId: servers4[3].id });
    assert.equal((await freezeEvents()).length, before + 1);
    assert.deepEqual(await frozenByName(), { B: false, C: false });
    // At the limit, nothing more can be added.
    await rejectsWith(servers().createServer({ organizationSlug: "acme", name: "E", game: Game.MINECRAFT }), Code.FailedPrecondition, "plan_limit_reached");
  });

  it("an agent still connected to another instance is refused sign-ins in game with the reason, and sent away at its next heartbeat", async () => {
    await w.createServer("One");
    await w.createServer("Two");
    const far = await w.createServer("Far", { connect: false });
    const other = await startTestCore({ ...w.t.deps.config, plans }, { database: w.t.database });
    cores.push(other);
    // No heartbeat during the sign-in; another agent beats often.
    const quiet = connect(far.key, { core: other, heartbeatMs: 60_000 });
    await quiet.connected();
    const { clientId } = await w.createClient({ policy: "any" });
    const { session } = await w.start({ clientId });

    await setPlan("small");
    const steve = player("Steve");
    assert.deepEqual(await quiet.playCommand(steve, command(session)), { accepted: false, message: frozenInGame });
    assert.deepEqual(await quiet.confirm(steve), { accepted: false, message: frozenInGame });
    const { events } = await w.t
      .client(ActivityService, { session: w.session })
      .listOrganizationActivity({ organizationSlug: "acme", action: "game_oauth.sign_in_refused" });
    assert.equal(events[0].details.reason, "server_frozen");
    assert.equal(events[0].details.message, frozenInGame);
    await quiet.stop();

    const beating = connect(far.key, { core: other, heartbeatMs: 1_000 });
    const refused = await rejectsWith(beating.stopped, Code.FailedPrecondition, "server_frozen");
    assert.equal(refused.rawMessage, frozenAtTwo, "refused at Hello");

    await setPlan("free");
    const again = connect(far.key, { core: other, heartbeatMs: 1_000 });
    await again.connected();
    await setPlan("small");
    await rejectsWith(again.stopped, Code.FailedPrecondition, "server_frozen"); // at its next heartbeat
  });

  it("the hosted sign-in page leaves frozen servers out, and a sign-in on an unfrozen one works", async () => {
    const one = await w.createServer("One");
    const two = await w.createServer("Two");
    const three = await w.createServer("Three");
    const { clientId } = await w.createClient({ policy: { servers: [one.id, two.id, three.id] } });
    await setPlan("small");
    const { session } = await w.start({ clientId });
    assert.deepEqual(session.servers.map((s) => s.name).sort(), ["One", "Two"]);
    assert.equal((await playAndConfirm(two.agent!, player("Alex"), session)).accepted, true);
  });

  it("a plan no longer configured freezes nothing (it only lets the organization add nothing)", async () => {
    for (const name of ["A", "B", "C"]) await w.createServer(name, { connect: false });
    await w.t.orm.em.fork().getConnection().execute(`update organizations set plan = 'retired' where slug = 'acme'`);
    assert.deepEqual(await frozenByName(), { A: false, B: false, C: false });
    await rejectsWith(servers().createServer({ organizationSlug: "acme", name: "D", game: Game.MINECRAFT }), Code.FailedPrecondition, "failed_precondition");
    // Moved to a configured plan, its limit applies; the events say so.
    const before = (await freezeEvents()).length;
    await setPlan("small");
    assert.deepEqual(await frozenByName(), { A: false, B: false, C: true });
    assert.deepEqual((await freezeEvents()).slice(before), [["server.frozen", "C", "status", "warning"]]);
  });
});
