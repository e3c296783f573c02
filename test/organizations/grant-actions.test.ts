import assert from "node:assert/strict";
import { Code } from "@connectrpc/connect";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { OrganizationsService } from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { AccessGrantState, Role, ServerAction } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { ServersService } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { ActivityService } from "../../gen/outpost/activity/v1/activity_service_pb.js";
import { Game, PlayerAuth } from "../../gen/outpost/servers/v1/resources_pb.js";
import { startAgent, type Agent } from "../../agent/client.ts";
import { maxWaitingCommands } from "../../core/agents/console.ts";
import { acmeWithMembers, type Account } from "../support/fixtures.ts";
import { startTestCore, testConfig, type TestCore } from "../support/core.ts";
import { rejectsWith } from "../support/errors.ts";

const config = { ...testConfig, plans: { free: { ...testConfig.plans.free, servers: 50, gameOAuthClients: 2 } } };

/**
 * What a grant allows: its actions gate each procedure about a server, and its constraints (an
 * expiry, a number of acting uses, a duration after first use) end it at once, saying why.
 * Console commands run on a real agent over the in-process transport.
 */
describe("organizations: grant actions and constraints", function () {
  this.timeout(60_000);
  let t: TestCore;
  let owner: Account;
  let admin: Account;
  let member: Account;
  const agents: Agent[] = [];
  const orgs = (who: Account) => t.client(OrganizationsService, { session: who.token });
  const servers = (who: Account) => t.client(ServersService, { session: who.token });
  const inMinutes = (minutes: number) => timestampFromDate(new Date(t.clock.now().getTime() + minutes * 60_000));

  /** A new server with a connected agent whose console answers every command. */
  const onlineServer = async (name: string) => {
    const res = await servers(owner).createServer({ organizationSlug: "acme", name, game: Game.MINECRAFT });
    const agent = startAgent({
      url: "http://in-process",
      key: res.agentKey,
      game: Game.MINECRAFT,
      playerAuth: PlayerAuth.ONLINE,
      reconnect: false,
      transport: t.core.transport(),
      console: async (command) => ({ success: true, output: [`ran ${command}`] }),
    });
    agents.push(agent);
    await agent.connected();
    return res.server!.id;
  };
  const grant = (serverId: string, actions: ServerAction[], constraints?: { expiresAt?: ReturnType<typeof inMinutes>; maxUses?: number; durationSeconds?: number }) =>
    orgs(owner).createAccessGrant({ organizationSlug: "acme", userId: member.userId, serverId, actions, constraints });
  const run = (serverId: string, who = member) => servers(who).executeConsoleCommand({ serverId, command: "say hi" });

  before(async () => {
    t = await startTestCore(config);
    ({ owner, admin, member } = await acmeWithMembers(t));
  });
  after(async () => {
    await Promise.all(agents.splice(0).map((agent) => agent.stop()));
    await t?.close();
  });

  it("gates each procedure by action: view alone sees the server but runs no command and opens no console", async () => {
    const serverId = await onlineServer("Viewable");
    const { accessGrant } = await grant(serverId, [ServerAction.VIEW]);
    assert.deepEqual(accessGrant!.actions, [ServerAction.VIEW]);
    assert.equal(accessGrant!.state, AccessGrantState.ACTIVE);
    assert.equal((await servers(member).getServer({ serverId })).server?.id, serverId);
    await servers(member).listPlayers({ serverId });
    const refused = await rejectsWith(run(serverId), Code.PermissionDenied, "permission_denied");
    assert.match(refused.rawMessage, /does not allow console_command/);
    const watch = servers(member).watchConsole({ serverId })[Symbol.asyncIterator]();
    const watchRefused = await rejectsWith(watch.next(), Code.PermissionDenied, "permission_denied");
    assert.match(watchRefused.rawMessage, /does not allow console_read/);
    // Managers need no grant for anything.
    assert.equal((await run(serverId, admin)).success, true);
  });

  it("lets console_command run commands (view implied) and console_read watch, each spending a use", async () => {
    const serverId = await onlineServer("Commanded");
    const { accessGrant } = await grant(serverId, [ServerAction.CONSOLE_COMMAND, ServerAction.CONSOLE_READ]);
    assert.deepEqual(accessGrant!.actions, [ServerAction.VIEW, ServerAction.CONSOLE_READ, ServerAction.CONSOLE_COMMAND]);
    const answer = await run(serverId);
    assert.deepEqual([answer.success, answer.output], [true, ["ran say hi"]]);
    const abort = new AbortController();
    const first = await servers(member).watchConsole({ serverId }, { signal: abort.signal })[Symbol.asyncIterator]().next();
    assert.equal(first.value?.online, true);
    abort.abort();
    await servers(member).getServer({ serverId });
    const [listed] = (await orgs(owner).listAccessGrants({ organizationSlug: "acme", userId: member.userId, serverId })).accessGrants;
    assert.equal(listed.uses, 2, "a command and a watch count; viewing does not");
    assert.ok(listed.firstUsedAt);
  });

  it("spends no use on a command that never reached the agent (offline), and one on a command that did", async () => {
    const { server } = await servers(owner).createServer({ organizationSlug: "acme", name: "Sleeping", game: Game.MINECRAFT });
    await grant(server!.id, [ServerAction.CONSOLE_COMMAND], { maxUses: 1, durationSeconds: 60 });
    await rejectsWith(run(server!.id), Code.FailedPrecondition, "agent_offline");
    await rejectsWith(run(server!.id), Code.FailedPrecondition, "agent_offline");
    const [kept] = (await orgs(owner).listAccessGrants({ organizationSlug: "acme", serverId: server!.id })).accessGrants;
    assert.deepEqual([kept.uses, kept.firstUsedAt, kept.state], [0, undefined, AccessGrantState.ACTIVE], "nothing spent, the duration not started");
    const { events } = await t.client(ActivityService, { session: owner.token }).listOrganizationActivity({ organizationSlug: "acme", serverId: server!.id });
    assert.deepEqual(
      events.filter((e) => e.action === "server.console_command").map((e) => e.details.outcome),
      ["offline", "offline"],
    );

    const online = await onlineServer("Awake");
    await grant(online, [ServerAction.CONSOLE_COMMAND], { maxUses: 1 });
    assert.equal((await run(online)).success, true);
    const refused = await rejectsWith(run(online), Code.PermissionDenied, "permission_denied");
    assert.match(refused.rawMessage, /has used all 1 use/);
  });

  it("gives the use back when a command is turned away unsent because too many are waiting for the agent", async () => {
    // An agent whose console never answers, so commands sent to it stay waiting.
    const res = await servers(owner).createServer({ organizationSlug: "acme", name: "Jammed", game: Game.MINECRAFT });
    const agent = startAgent({
      url: "http://in-process",
      key: res.agentKey,
      game: Game.MINECRAFT,
      playerAuth: PlayerAuth.ONLINE,
      reconnect: false,
      transport: t.core.transport(),
      console: () => new Promise(() => {}),
    });
    agents.push(agent);
    await agent.connected();
    const serverId = res.server!.id;
    await grant(serverId, [ServerAction.CONSOLE_COMMAND], { maxUses: 2 });
    // The agent's queue, full: as many commands waiting as may wait.
    const [{ agent_connection_id: connectionId }] = await t.orm.em.fork().getConnection().execute("select agent_connection_id from servers where id = ?", [serverId]);
    const connection = t.agents.holding(connectionId)!;
    const pending = Array.from({ length: maxWaitingCommands }, (_, i) => connection.console.run(`jam-${i}`, "list", 60_000).catch(() => undefined));
    await rejectsWith(run(serverId), Code.ResourceExhausted, "server_busy");
    const [kept] = (await orgs(owner).listAccessGrants({ organizationSlug: "acme", serverId })).accessGrants;
    assert.equal(kept.uses, 0, "a command the agent never got spends nothing");
    connection.console.close();
    await Promise.all(pending);
  });

  it("ends a grant at expires_at, saying when", async () => {
    const serverId = await onlineServer("Expiring");
    await grant(serverId, [ServerAction.CONSOLE_COMMAND], { expiresAt: inMinutes(10) });
    assert.equal((await run(serverId)).success, true);
    t.clock.advance(11 * 60_000);
    const refused = await rejectsWith(servers(member).getServer({ serverId }), Code.PermissionDenied, "permission_denied");
    assert.match(refused.rawMessage, /your access grant to this server expired at \d{4}-\d\d-\d\dT/);
    await rejectsWith(run(serverId), Code.PermissionDenied, "permission_denied");
    const visible = (await servers(member).listServers({ organizationSlug: "acme" })).servers.map((s) => s.id);
    assert.ok(!visible.includes(serverId), "an expired grant's server is not listed");
    const [listed] = (await orgs(owner).listAccessGrants({ organizationSlug: "acme", userId: member.userId, serverId })).accessGrants;
    assert.equal(listed.state, AccessGrantState.EXPIRED);
  });

  it("spends max_uses atomically: of 5 commands at once under max_uses 3, exactly 3 run", async () => {
    const serverId = await onlineServer("Limited");
    await grant(serverId, [ServerAction.CONSOLE_COMMAND], { maxUses: 3 });
    // Viewing spends nothing.
    await servers(member).getServer({ serverId });
    const results = await Promise.allSettled(Array.from({ length: 5 }, () => run(serverId)));
    const succeeded = results.filter((r) => r.status === "fulfilled");
    assert.equal(succeeded.length, 3, JSON.stringify(results.map((r) => r.status)));
    for (const r of results) {
      if (r.status === "rejected") await rejectsWith(Promise.reject(r.reason), Code.PermissionDenied, "permission_denied");
    }
    const refused = await rejectsWith(run(serverId), Code.PermissionDenied, "permission_denied");
    assert.match(refused.rawMessage, /has used all 3 uses/);
    await rejectsWith(servers(member).getServer({ serverId }), Code.PermissionDenied, "permission_denied");
    const [listed] = (await orgs(owner).listAccessGrants({ organizationSlug: "acme", serverId })).accessGrants;
    assert.deepEqual([listed.uses, listed.constraints?.maxUses, listed.state], [3, 3, AccessGrantState.USED_UP]);
    const { events } = await t.client(ActivityService, { session: owner.token }).listOrganizationActivity({ organizationSlug: "acme", serverId });
    assert.equal(events.filter((e) => e.action === "access_grant.used_up").length, 1);
    assert.equal(events.filter((e) => e.action === "server.console_command" && e.details.outcome === "denied").length, 3);
  });

  it("starts duration_seconds at the first use, viewing included", async () => {
    const serverId = await onlineServer("Timed");
    const { accessGrant } = await grant(serverId, [ServerAction.CONSOLE_COMMAND], { durationSeconds: 120 });
    assert.equal(accessGrant!.firstUsedAt, undefined);
    assert.equal(accessGrant!.endsAt, undefined);
    assert.equal((await run(serverId)).success, true);
    const [started] = (await orgs(owner).listAccessGrants({ organizationSlug: "acme", serverId })).accessGrants;
    assert.ok(started.firstUsedAt && started.endsAt);
    assert.equal(Number(started.endsAt.seconds - started.firstUsedAt.seconds), 120);
    t.clock.advance(121_000);
    const refused = await rejectsWith(run(serverId), Code.PermissionDenied, "permission_denied");
    assert.match(refused.rawMessage, /expired at/);
    assert.equal((await orgs(member).getCurrentMember({ organizationSlug: "acme" })).accessGrants.find((g) => g.serverId === serverId)?.state, AccessGrantState.EXPIRED);
  });

  it("does not run a duration down before the first use; viewing starts it", async () => {
    const serverId = await onlineServer("Viewed later");
    await grant(serverId, [ServerAction.VIEW], { durationSeconds: 60 });
    t.clock.advance(10 * 60_000);
    await servers(member).getServer({ serverId });
    const [started] = (await orgs(owner).listAccessGrants({ organizationSlug: "acme", serverId })).accessGrants;
    assert.equal(started.uses, 0, "viewing spends no use");
    assert.ok(started.firstUsedAt);
    t.clock.advance(61_000);
    await rejectsWith(servers(member).getServer({ serverId }), Code.PermissionDenied, "permission_denied");
  });

  it("validates actions and constraints (invalid_argument), writing nothing", async () => {
    const serverId = await onlineServer("Validated");
    const cases: Array<[Parameters<typeof grant>[1], Parameters<typeof grant>[2], RegExp]> = [
      [[], undefined, /actions/],
      [[ServerAction.VIEW], { expiresAt: inMinutes(-1) }, /expires_at must be in the future/],
      [[ServerAction.VIEW], { maxUses: 0 }, /max_uses/],
      [[ServerAction.VIEW], { maxUses: 1_000_001 }, /max_uses/],
      [[ServerAction.VIEW], { durationSeconds: 59 }, /duration_seconds/],
      [[ServerAction.VIEW], { durationSeconds: 365 * 86_400 + 1 }, /duration_seconds/],
    ];
    for (const [actions, constraints, message] of cases) {
      const error = await rejectsWith(grant(serverId, actions, constraints), Code.InvalidArgument);
      assert.match(error.rawMessage, message);
    }
    assert.deepEqual((await orgs(owner).listAccessGrants({ organizationSlug: "acme", serverId })).accessGrants, []);
  });

  it("getCurrentMember: the caller's role and own grants, for any member", async () => {
    const mine = await orgs(member).getCurrentMember({ organizationSlug: "acme" });
    assert.equal(mine.role, Role.MEMBER);
    assert.equal(mine.userId, member.userId);
    assert.ok(mine.accessGrants.length >= 5);
    assert.ok(mine.accessGrants.every((g) => g.userId === member.userId));
    assert.ok(mine.accessGrants.some((g) => g.state === AccessGrantState.USED_UP));
    const theirs = await orgs(admin).getCurrentMember({ organizationSlug: "acme" });
    assert.deepEqual([theirs.role, theirs.accessGrants], [Role.ADMIN, []]);
    await rejectsWith(orgs(member).getCurrentMember({ organizationSlug: "elsewhere" }), Code.NotFound, "not_found");
  });
});
