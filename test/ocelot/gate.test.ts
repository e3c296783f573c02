import assert from "node:assert/strict";
import { Code } from "@connectrpc/connect";
import { ResponseStyle, ToolRefusal } from "../../gen/outpost/ocelot/v1/resources_pb.js";
import { OrganizationsService } from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { Role } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { rejectsWith } from "../support/errors.ts";
import { joinOrganization, type Account } from "../support/fixtures.ts";
import { startOcelotFixture, type OcelotFixture } from "./fixture.ts";
import { allActions } from "../support/grants.ts";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { ServersService } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { Game } from "../../gen/outpost/servers/v1/resources_pb.js";

const acme = { organizationSlug: "acme" };
const allTools = { consoleRead: true, consoleCommand: true, players: true, knowledgeRead: true, knowledgeWrite: true, serverLifecycle: false, files: false };

/**
 * The tool-action gate: refusals and their reasons, tokens used once by their own caller, quota
 * reserved and given back, confirmation, expiry, the emergency stop. Preflight is served; the
 * steps after it are core's alone and are taken here as the chat router takes them (f.gate).
 */
describe("ocelot: tool-action gate", () => {
  let f: OcelotFixture;
  let granted: Account;
  const read = () => ({ ...acme, tool: "console.read", serverId: f.server });
  const command = (text = "say hi") => ({ ...acme, tool: "console.command", serverId: f.server, conversationId: "conv-1", argumentsSummary: text });
  const configure = async (extra: object = {}, switches: object = {}) => {
    const version = (await f.api(f.cast.owner).getOcelotConfig(acme)).config!.version;
    await f
      .api(f.cast.owner)
      .updateOcelotConfig({ ...acme, version, settings: { enabled: true, tools: allTools, responseStyle: ResponseStyle.CONCISE, ...extra }, ...switches });
  };
  const used = async () => (await f.api(f.cast.owner).getOcelotUsageStats(acme)).usage!.toolActions;

  before(async () => {
    f = await startOcelotFixture();
    granted = await f.t.signUp("granted@example.com");
    const orgs = f.t.client(OrganizationsService, { session: f.cast.owner.token });
    await joinOrganization(f.t, f.cast.owner, acme.organizationSlug, granted, Role.MEMBER);
    await orgs.createAccessGrant({ ...acme, userId: granted.userId, serverId: f.server, actions: allActions });
  });
  beforeEach(async () => {
    await f.sql(`delete from ocelot_tool_actions`);
    await f.sql(`delete from ocelot_daily_usage`);
    await configure();
  });
  after(async () => {
    await f?.t.close();
  });

  it("says why a tool is refused, in preflight (changing nothing) and in authorize: family off, disabled, permission, emergency stop, plan limit", async () => {
    const refusal = async (who: Account, req: object, expected: ToolRefusal, reason: string) => {
      const pre = await f.api(who).preflightToolAction(req as never);
      assert.equal(pre.allowed, false);
      assert.equal(pre.refusal, expected, pre.message);
      await rejectsWith(f.gate(who).authorize(req as never), reason === "permission_denied" ? Code.PermissionDenied : Code.FailedPrecondition, reason);
    };
    await refusal(f.cast.member, read(), ToolRefusal.PERMISSION_DENIED, "permission_denied");
    await refusal(granted, { ...acme, tool: "knowledge.write" }, ToolRefusal.PERMISSION_DENIED, "permission_denied");
    const ok = await f.api(granted).preflightToolAction(read());
    assert.deepEqual([ok.allowed, ok.quotaWeight, ok.requiresConfirmation], [true, 1, false]);
    await configure({ tools: { ...allTools, consoleRead: false } });
    await refusal(granted, read(), ToolRefusal.FEATURE_DISABLED, "feature_disabled");
    await configure({ enabled: false });
    await refusal(granted, read(), ToolRefusal.FEATURE_DISABLED, "feature_disabled");
    await configure();
    await f.api(f.cast.admin).setOcelotEmergencyStop({ ...acme, on: true });
    await refusal(f.cast.owner, read(), ToolRefusal.EMERGENCY_STOP, "emergency_stop");
    await f.api(f.cast.admin).setOcelotEmergencyStop({ ...acme, on: false });
    await f.sql(
      `insert into ocelot_daily_usage (organization_id, day, tool_actions) select id, (now() at time zone 'utc')::date, 6 from organizations where slug = 'acme'`,
    );
    await refusal(f.cast.owner, read(), ToolRefusal.PLAN_LIMIT_REACHED, "plan_limit_reached");
    assert.equal(await used(), 6, "refusals reserve nothing");
    await rejectsWith(f.api(f.cast.owner).preflightToolAction({ ...acme, tool: "console.delete" }), Code.InvalidArgument);
    await rejectsWith(f.api(f.cast.owner).preflightToolAction({ ...acme, tool: "console.read" }), Code.InvalidArgument);
    await rejectsWith(f.api(f.cast.outsider).preflightToolAction(read()), Code.NotFound);
  });

  it("reserves exactly the plan's quota under parallel authorizations, and a release gives it back", async () => {
    const results = await Promise.allSettled(Array.from({ length: 12 }, () => f.gate(granted).authorize(read())));
    const won = results.filter((r) => r.status === "fulfilled");
    assert.equal(won.length, 6);
    for (const r of results) if (r.status === "rejected") assert.match(String(r.reason), /daily limit of 6 assistant tool actions/);
    assert.equal(await used(), 6);
    const token = (won[0] as PromiseFulfilledResult<{ executionToken: string }>).value.executionToken;
    await f.gate(granted).release("console.read", token);
    assert.equal(await used(), 5);
    await rejectsWith(f.gate(granted).release("console.read", token), Code.FailedPrecondition);
    await f.gate(granted).authorize(read());
    assert.equal(await used(), 6);
  });

  it("uses a token once: of two concurrent completions one succeeds; another caller, tool or organization is refused", async () => {
    const { executionToken, expiresAt, quotaWeight } = await f.gate(granted).authorize(read());
    assert.match(executionToken, /^oet_[0-9A-Za-z]{40}$/);
    assert.equal(quotaWeight, 1);
    const lifetime = expiresAt.getTime() / 1000 - Date.now() / 1000;
    assert.ok(lifetime > 240 && lifetime <= 301, `about 5 minutes (${lifetime})`);
    const [stored] = await f.sql<{ token_hash: string }>(`select token_hash from ocelot_tool_actions`);
    assert.notEqual(stored.token_hash, executionToken, "stored hashed");
    const complete = (who: Account, tool = "console.read") => f.gate(who).complete(tool, executionToken, true, "20 lines");
    await rejectsWith(complete(f.cast.owner), Code.PermissionDenied);
    await rejectsWith(complete(granted, "players.list"), Code.PermissionDenied);
    await rejectsWith(f.gate(f.cast.outsider, "elsewhere").complete("console.read", executionToken, true), Code.NotFound);
    const both = await Promise.allSettled([complete(granted), complete(granted)]);
    assert.deepEqual(both.map((r) => r.status).sort(), ["fulfilled", "rejected"]);
    assert.match(String((both.find((r) => r.status === "rejected") as PromiseRejectedResult).reason), /already used/);
    assert.equal(await used(), 1, "a completed action keeps its quota");
  });

  it("refuses an expired token and gives its quota back; so does the next authorization for tokens nobody presents again", async () => {
    const a = await f.gate(granted).authorize(read());
    const b = await f.gate(granted).authorize(read());
    await f.sql(`update ocelot_tool_actions set expires_at = now() - interval '1 second'`);
    await rejectsWith(f.gate(granted).complete("console.read", a.executionToken, true), Code.FailedPrecondition);
    assert.equal(await used(), 1);
    await f.gate(f.cast.owner).authorize({ ...acme, tool: "knowledge.search" });
    assert.equal(await used(), 1, "b's weight given back, the new one's reserved");
    const [row] = await f.sql<{ status: string }>(`select status from ocelot_tool_actions where id = ?`, [b.actionId]);
    assert.equal(row.status, "expired");
    assert.equal((await f.actions("ocelot_tool.expired")).length, 2);
  });

  it("a console command waits for a person: complete before confirm is refused; only the caller confirms, not even a manager; denying releases; break-glass skips it", async () => {
    const first = await f.gate(granted).authorize(command());
    assert.equal(first.requiresConfirmation, true);
    assert.equal(first.quotaWeight, 2);
    const done = (token: string) => f.gate(granted).complete("console.command", token, false, "unknown command");
    await rejectsWith(done(first.executionToken), Code.FailedPrecondition);
    await rejectsWith(f.gate(f.cast.admin).confirm(first.executionToken, true), Code.PermissionDenied);
    await f.gate(granted).confirm(first.executionToken, true);
    await done(first.executionToken);
    const second = await f.gate(granted).authorize(command("stop"));
    await rejectsWith(f.gate(f.cast.member).confirm(second.executionToken, true), Code.PermissionDenied);
    assert.equal(await used(), 4);
    await f.gate(granted).confirm(second.executionToken, false);
    assert.equal(await used(), 2, "denied: its weight is back");
    await rejectsWith(done(second.executionToken), Code.FailedPrecondition);
    const read1 = await f.gate(granted).authorize(read());
    await rejectsWith(f.gate(granted).confirm(read1.executionToken, true), Code.FailedPrecondition);
    await configure({}, { breakGlass: true, breakGlassMinutes: 5 });
    const third = await f.gate(granted).authorize(command());
    assert.equal(third.requiresConfirmation, false);
    await f.gate(granted).complete("console.command", third.executionToken, true);
    const events = await f.actions("ocelot_tool");
    const byAction = (action: string) => events.filter((e) => e.action === action);
    assert.equal(byAction("ocelot_tool.failed")[0].details.result, "unknown command");
    assert.equal(byAction("ocelot_tool.denied")[0].details.arguments, "stop");
    assert.equal(byAction("ocelot_tool.confirmed").length, 1);
    assert.ok(byAction("ocelot_tool.authorized").every((e) => e.details.tool && e.details.weight));
    assert.equal(byAction("ocelot_tool.completed")[0].details.conversation_id, "conv-1");
  });

  it("the emergency stop ends authorized tokens: completing or confirming one is refused emergency_stop and its quota given back", async () => {
    const a = await f.gate(granted).authorize(read());
    const b = await f.gate(granted).authorize(command());
    await f.api(f.cast.owner).setOcelotEmergencyStop({ ...acme, on: true });
    await rejectsWith(f.gate(granted).complete("console.read", a.executionToken, true), Code.FailedPrecondition, "emergency_stop");
    await rejectsWith(f.gate(granted).confirm(b.executionToken, true), Code.FailedPrecondition, "emergency_stop");
    assert.equal(await used(), 0);
    await f.api(f.cast.owner).setOcelotEmergencyStop({ ...acme, on: false });
    await rejectsWith(f.gate(granted).complete("console.read", a.executionToken, true), Code.FailedPrecondition, "failed_precondition");
    assert.equal((await f.actions("ocelot_tool.stopped")).length, 2);
  });

  it("reads a member's grant by the service's clock, as the console does: a grant past its expiry there is refused", async () => {
    const brief = await f.t.signUp("brief@example.com");
    const orgs = f.t.client(OrganizationsService, { session: f.cast.owner.token });
    await joinOrganization(f.t, f.cast.owner, acme.organizationSlug, brief, Role.MEMBER);
    const expiresAt = timestampFromDate(new Date(f.t.clock.now().getTime() + 60_000));
    await orgs.createAccessGrant({ ...acme, userId: brief.userId, serverId: f.server, actions: allActions, constraints: { expiresAt } });
    assert.equal((await f.api(brief).preflightToolAction(read())).allowed, true);
    f.t.clock.advance(120_000);
    try {
      const pre = await f.api(brief).preflightToolAction(read());
      assert.deepEqual([pre.allowed, pre.refusal], [false, ToolRefusal.PERMISSION_DENIED], pre.message);
      assert.match(pre.message, /expired/);
      await rejectsWith(f.gate(brief).authorize(read()), Code.PermissionDenied);
    } finally {
      f.t.clock.advance(-120_000);
    }
  });

  it("judging and authorizing start no grant's duration (running the tool does, through the server's own path)", async () => {
    const timed = await f.t.signUp("timed@example.com");
    const orgs = f.t.client(OrganizationsService, { session: f.cast.owner.token });
    await joinOrganization(f.t, f.cast.owner, acme.organizationSlug, timed, Role.MEMBER);
    await orgs.createAccessGrant({ ...acme, userId: timed.userId, serverId: f.server, actions: allActions, constraints: { durationSeconds: 600 } });
    assert.equal((await f.api(timed).preflightToolAction(read())).allowed, true);
    await f.gate(timed).authorize(read());
    const [grant] = (await f.t.client(OrganizationsService, { session: timed.token }).getCurrentMember(acme)).accessGrants;
    assert.equal(grant.firstUsedAt, undefined, "the grant's 10 minutes have not started");
    assert.equal(grant.uses, 0);
  });

  it("refuses the console tools on a frozen server, as the console does, reserving nothing; listing its players stays allowed", async () => {
    await f.sql(`update organizations set plan = 'pro' where slug = 'acme'`);
    const servers = f.t.client(ServersService, { session: f.cast.owner.token });
    const extra: string[] = [];
    try {
      for (const name of ["Two", "Three", "Four"]) extra.push((await servers.createServer({ ...acme, name, game: Game.MINECRAFT })).server!.id);
      await f.sql(`update organizations set plan = 'free' where slug = 'acme'`);
      // The fixture's server becomes the newest of four on a plan of three: frozen.
      await f.sql(`update servers set created_at = now() + interval '1 day' where id = ?`, [f.server]);
      assert.equal((await servers.getServer({ serverId: f.server })).server!.frozen, true);
      for (const who of [granted, f.cast.owner]) {
        await rejectsWith(f.api(who).preflightToolAction(read()), Code.FailedPrecondition, "server_frozen");
        await rejectsWith(f.gate(who).authorize(read()), Code.FailedPrecondition, "server_frozen");
        await rejectsWith(f.gate(who).authorize(command()), Code.FailedPrecondition, "server_frozen");
      }
      assert.equal(await used(), 0);
      assert.equal((await f.api(granted).preflightToolAction({ ...acme, tool: "players.list", serverId: f.server })).allowed, true);
    } finally {
      await f.sql(`update organizations set plan = 'free' where slug = 'acme'`);
      for (const id of extra) await servers.deleteServer({ serverId: id });
      await f.sql(`update servers set created_at = now() - interval '1 day' where id = ?`, [f.server]);
    }
  });
});
