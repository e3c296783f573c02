import assert from "node:assert/strict";
import { Code } from "@connectrpc/connect";
import { ResponseStyle } from "../../gen/outpost/ocelot/v1/resources_pb.js";
import { KnowledgeService } from "../../gen/outpost/knowledge/v1/knowledge_service_pb.js";
import { ActivityKind, ActivitySeverity } from "../../gen/outpost/activity/v1/activity_service_pb.js";
import { recordAssistantQuery } from "../../core/ocelot/gate.ts";
import { requireMember } from "../../core/access.ts";
import { DomainError } from "../../core/errors.ts";
import { rejectsWith } from "../support/errors.ts";
import type { Account } from "../support/fixtures.ts";
import { startOcelotFixture, type OcelotFixture } from "./fixture.ts";

const acme = { organizationSlug: "acme" };
const tools = { consoleRead: true, consoleCommand: true, players: true, knowledgeRead: true, knowledgeWrite: false, serverLifecycle: false, files: false };
const settings = (extra: object = {}) => ({
  enabled: true,
  tools,
  dailyQueryCap: 0,
  responseStyle: ResponseStyle.DETAILED,
  customInstructions: "Be kind to new players.",
  ...extra,
});

/** The assistant's settings: who reads and changes them, versions, the two switches, and the daily question cap. */
describe("ocelot: settings", () => {
  let f: OcelotFixture;
  const version = async () => (await f.api(f.cast.owner).getOcelotConfig(acme)).config!.version;
  const ask = (who: Account) => {
    const em = f.t.orm.em.fork();
    const caller = {
      kind: "user" as const,
      user: { id: who.userId, email: who.email, name: "", platformAdmin: false },
      credential: { kind: "session" as const, id: "x", expiresAt: null },
    };
    return em
      .transactional(async (tx) => recordAssistantQuery(f.t.deps.statements.db(tx), f.t.deps.config, await requireMember(tx, caller, "acme")))
      .catch((error) => {
        // A domain error as a caller over Connect would see it.
        throw error instanceof DomainError ? error.toConnectError() : error;
      });
  };

  before(async () => {
    f = await startOcelotFixture();
  });
  after(async () => {
    await f?.t.close();
  });

  it("has defaults before anyone saves: on, read-only families, concise, version 0", async () => {
    const { config } = await f.api(f.cast.member).getOcelotConfig(acme);
    assert.equal(config!.version, 0);
    assert.equal(config!.settings!.enabled, true);
    assert.deepEqual(
      { ...config!.settings!.tools, $typeName: undefined },
      { $typeName: undefined, consoleRead: true, consoleCommand: false, players: true, knowledgeRead: true, knowledgeWrite: false, serverLifecycle: false, files: false },
    );
    assert.equal(config!.settings!.responseStyle, ResponseStyle.CONCISE);
    assert.equal(config!.emergencyStop!.on, false);
    assert.equal(config!.breakGlass!.on, false);
  });

  it("lets owners and admins replace the settings with the version they read; a stale version is aborted (409), members are refused", async () => {
    const v0 = await version();
    const { config } = await f.api(f.cast.admin).updateOcelotConfig({ ...acme, version: v0, settings: settings() });
    assert.equal(config!.version, v0 + 1);
    assert.equal(config!.settings!.responseStyle, ResponseStyle.DETAILED);
    assert.equal(config!.settings!.customInstructions, "Be kind to new players.");
    await rejectsWith(f.api(f.cast.owner).updateOcelotConfig({ ...acme, version: v0, settings: settings({ enabled: false }) }), Code.Aborted, "version_conflict");
    await rejectsWith(f.api(f.cast.member).updateOcelotConfig({ ...acme, version: v0 + 1, settings: settings() }), Code.PermissionDenied, "permission_denied");
    await rejectsWith(f.api(f.cast.outsider).getOcelotConfig(acme), Code.NotFound);
    const seen = (await f.api(f.cast.member).getOcelotConfig(acme)).config!;
    assert.equal(seen.settings!.customInstructions, "", "members do not see the custom instructions");
    assert.equal(seen.customInstructionsHidden, true);
    assert.equal(seen.settings!.responseStyle, ResponseStyle.DETAILED);
    assert.equal((await f.api(f.cast.owner).getOcelotConfig(acme)).config!.settings!.enabled, true, "the stale update changed nothing");
    assert.equal((await f.actions("ocelot.config_updated")).length, 1);
  });

  it("refuses bad settings naming the field: a cap above the plan's, instructions over 4,000 characters, break-glass over 24 h", async () => {
    const v = await version();
    const error = await rejectsWith(f.api(f.cast.owner).updateOcelotConfig({ ...acme, version: v, settings: settings({ dailyQueryCap: 11 }) }), Code.InvalidArgument);
    assert.match(error.message, /dailyQueryCap.*at most 10/);
    await rejectsWith(
      f.api(f.cast.owner).updateOcelotConfig({ ...acme, version: v, settings: settings({ customInstructions: "x".repeat(4001) }) }),
      Code.InvalidArgument,
    );
    await rejectsWith(
      f.api(f.cast.owner).updateOcelotConfig({ ...acme, version: v, settings: settings(), breakGlass: true, breakGlassMinutes: 1441 }),
      Code.InvalidArgument,
    );
    assert.equal(await version(), v);
  });

  it("the emergency stop: turned on by an admin at once (whatever the version), who and when kept, events in the security kind", async () => {
    const { config } = await f.api(f.cast.admin).setOcelotEmergencyStop({ ...acme, on: true });
    assert.equal(config!.emergencyStop!.on, true);
    assert.equal(config!.emergencyStop!.setByEmail, "admin@example.com");
    assert.ok(config!.emergencyStop!.setAt);
    await rejectsWith(f.api(f.cast.member).setOcelotEmergencyStop({ ...acme, on: false }), Code.PermissionDenied);
    await rejectsWith(ask(f.cast.member), Code.FailedPrecondition, "emergency_stop");
    const kept = await f.api(f.cast.owner).updateOcelotConfig({ ...acme, version: await version(), settings: settings() });
    assert.equal(kept.config!.emergencyStop!.on, true, "an update that does not send the switch leaves it");
    await f.api(f.cast.owner).setOcelotEmergencyStop({ ...acme, on: false });
    const events = (await f.actions("ocelot")).filter((e) => e.action.startsWith("ocelot.emergency_stop"));
    assert.deepEqual(
      events.slice(0, 2).map((e) => e.action),
      ["ocelot.emergency_stop_off", "ocelot.emergency_stop_on"],
    );
    assert.equal(events[1].kind, ActivityKind.SECURITY);
    assert.equal(events[1].severity, ActivitySeverity.WARNING);
  });

  it("break-glass: turned on for a while (a warning in the log), shown with its expiry, and off by itself once the time is up", async () => {
    const v = await version();
    const { config } = await f.api(f.cast.owner).updateOcelotConfig({ ...acme, version: v, settings: settings(), breakGlass: true, breakGlassMinutes: 30 });
    assert.equal(config!.breakGlass!.on, true);
    const minutes = (Number(config!.breakGlass!.expiresAt!.seconds) - Number(config!.breakGlass!.setAt!.seconds)) / 60;
    assert.equal(Math.round(minutes), 30);
    const on = (await f.actions("ocelot.break_glass_on"))[0];
    assert.equal(on.severity, ActivitySeverity.WARNING);
    assert.equal(on.details.minutes, "30");
    await f.sql(`update ocelot_configs set break_glass_expires_at = now() - interval '1 minute'`);
    assert.equal((await f.api(f.cast.member).getOcelotConfig(acme)).config!.breakGlass!.on, false, "expired is off");
    const preflight = await f.api(f.cast.owner).preflightToolAction({ ...acme, tool: "console.command", serverId: f.server });
    assert.equal(preflight.requiresConfirmation, true, "confirmations are back");
    await f.gate(f.cast.owner).authorize({ tool: "console.command", serverId: f.server, argumentsSummary: "say hi" });
    assert.equal((await f.actions("ocelot.break_glass_expired")).length, 1, "the first decision after the expiry records it, once");
    await f.gate(f.cast.owner).authorize({ tool: "console.read", serverId: f.server });
    assert.equal((await f.actions("ocelot.break_glass_expired")).length, 1);
    const v2 = await version();
    await f.api(f.cast.owner).updateOcelotConfig({ ...acme, version: v2, settings: settings(), breakGlass: true });
    const back = await f.api(f.cast.owner).updateOcelotConfig({ ...acme, version: await version(), settings: settings(), breakGlass: false });
    assert.equal(back.config!.breakGlass!.on, false);
    assert.equal((await f.actions("ocelot.break_glass_off"))[0].severity, ActivitySeverity.WARNING);
  });

  it("counts questions against the smaller of the plan's limit and the organization's cap; refuses past it, or while disabled", async () => {
    await f.sql(`delete from ocelot_daily_usage`);
    await f.api(f.cast.owner).updateOcelotConfig({ ...acme, version: await version(), settings: settings({ dailyQueryCap: 3 }) });
    const results = await Promise.allSettled(Array.from({ length: 6 }, () => ask(f.cast.member)));
    assert.equal(results.filter((r) => r.status === "fulfilled").length, 3);
    const refused = await rejectsWith(ask(f.cast.member), Code.FailedPrecondition, "plan_limit_reached");
    assert.match(refused.message, /daily limit of 3 assistant questions/);
    const usage = (await f.api(f.cast.member).getOcelotUsageStats(acme)).usage!;
    assert.equal(usage.queries, 3);
    assert.equal(usage.queryLimit, 3);
    assert.equal(usage.toolActionLimit, 6);
    assert.match(usage.day, /^\d{4}-\d{2}-\d{2}$/);
    assert.deepEqual([usage.notes, usage.noteLimit], [0, 5]);
    await f.t.client(KnowledgeService, { session: f.cast.owner.token }).createNote({ ...acme, spec: { title: "Restarts", content: "Ask first.", tags: [] } });
    assert.equal((await f.api(f.cast.member).getOcelotUsageStats(acme)).usage!.notes, 1, "the organization's notes, counted");
    await f.api(f.cast.owner).updateOcelotConfig({ ...acme, version: await version(), settings: settings({ enabled: false }) });
    await rejectsWith(ask(f.cast.member), Code.FailedPrecondition, "feature_disabled");
    assert.equal((await f.api(f.cast.member).getOcelotUsageStats(acme)).usage!.queryLimit, 10, "no cap of its own: the plan's");
    await rejectsWith(f.api(f.cast.outsider).getOcelotUsageStats(acme), Code.NotFound);
  });

  it("break-glass is judged by the database's clock alone: an instance whose clock runs ahead still turns it off, and shows it on", async () => {
    await f.api(f.cast.owner).updateOcelotConfig({ ...acme, version: await version(), settings: settings(), breakGlass: true, breakGlassMinutes: 30 });
    f.t.clock.advance(2 * 3600_000);
    try {
      assert.equal((await f.api(f.cast.owner).getOcelotConfig(acme)).config!.breakGlass!.on, true, "on until the database says its time is up");
      const off = await f.api(f.cast.owner).updateOcelotConfig({ ...acme, version: await version(), settings: settings(), breakGlass: false });
      assert.equal(off.config!.breakGlass!.on, false);
      const preflight = await f.api(f.cast.owner).preflightToolAction({ ...acme, tool: "console.command", serverId: f.server });
      assert.equal(preflight.requiresConfirmation, true, "commands wait for a person again");
    } finally {
      f.t.clock.advance(-2 * 3600_000);
    }
  });
});
