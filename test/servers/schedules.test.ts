import assert from "node:assert/strict";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import { OrganizationsService } from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { Role } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { joinOrganization } from "../support/fixtures.ts";
import { ScheduleAction, ScheduleRunOutcome, ServersService } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { Game, GameState, LifecycleAction, PlayerAuth } from "../../gen/outpost/servers/v1/resources_pb.js";
import { ActivityService } from "../../gen/outpost/activity/v1/activity_service_pb.js";
import { startAgent, type Agent } from "../../agent/client.ts";
import { runDueSchedules, startScheduleRunner } from "../../core/servers/schedule-runner.ts";
import { startTestCore, testConfig, type TestCore } from "../support/core.ts";
import { onPostgresServer } from "../support/database.ts";
import { rejectsWith } from "../support/errors.ts";

const config = { ...testConfig, plans: { free: { ...testConfig.plans.free, servers: 50 } } };

/**
 * Server schedules against core on a real database with the real agent library (in process): who
 * may manage them, what a bad one is told, the next runs in the chosen zone, warnings before a
 * restart, a run missed while no instance was up (run late within the grace period, skipped
 * beyond it, across a new instance's start), a run by hand, and — on a PostgreSQL server, where
 * instances share a bus — one run however many instances look at once.
 */
describe("servers: schedules", function () {
  this.timeout(60_000);
  let t: TestCore;
  let session: string;
  const agents: Agent[] = [];
  const cores: TestCore[] = [];
  const ran: string[] = [];
  const asked: LifecycleAction[] = [];

  const servers = (core = t) => core.client(ServersService, { session });
  const sql = (text: string, values: unknown[] = []) => t.orm.em.fork().getConnection().execute(text, values);
  /** A server whose agent (on `core`) records the console commands and lifecycle requests it gets. */
  const connectedServer = async (name: string, core = t) => {
    const res = await servers().createServer({ organizationSlug: "acme", name, game: Game.MINECRAFT });
    const agent = startAgent({
      url: "http://in-process",
      key: res.agentKey,
      game: Game.MINECRAFT,
      playerAuth: PlayerAuth.ONLINE,
      reconnect: false,
      transport: core.core.transport(),
      console: async (command) => (ran.push(command), { success: true, output: [`ran ${command}`] }),
      lifecycle: async (action) => (asked.push(action), { state: GameState.STOPPING, detail: "stop sent", changed: true }),
    });
    agents.push(agent);
    await agent.connected();
    return res.server!.id;
  };
  const terms = { name: "Nightly", cron: "0 4 * * *", timeZone: "Europe/Berlin", action: ScheduleAction.RESTART, text: "", warningMinutes: [1, 10, 5], enabled: true };
  /** Makes the schedule due at `at` (as if time had passed): the times themselves come from its cron. */
  const dueAt = (id: string, at: Date) => sql(`update server_schedules set next_run_at = ?, warned_minutes = null where id = ?`, [at, id]);
  const runs = async (scheduleId: string) => (await servers().listScheduleRuns({ scheduleId })).runs;

  before(async () => {
    t = await startTestCore(config);
    session = (await t.signUp("owner@example.com")).token;
    await t.client(OrganizationsService, { session }).createOrganization({ name: "Acme", slug: "acme" });
  });
  afterEach(async () => {
    await Promise.all(agents.splice(0).map((a) => a.stop()));
    ran.length = 0;
    asked.length = 0;
  });
  after(async () => {
    for (const core of cores) await core.close();
    await t?.close();
  });

  it("creates, lists, updates and deletes a schedule, with its next five runs in its zone; a bad one is told what is wrong", async () => {
    const serverId = await connectedServer("Survival");
    const { schedule } = await servers().createSchedule({ serverId, ...terms });
    assert.deepEqual(schedule!.warningMinutes, [10, 5, 1], "largest first");
    const times = schedule!.nextRuns.map((ts) => timestampDate(ts));
    assert.equal(times.length, 5);
    // 04:00 in Berlin is 03:00 UTC in winter.
    for (const time of times) assert.equal(time.toISOString().slice(11), "03:00:00.000Z");
    assert.equal(times[1].getTime() - times[0].getTime(), 24 * 3600_000);

    const bad = await rejectsWith(
      servers().createSchedule({ serverId, ...terms, cron: "0 4 * *", timeZone: "Mars/Olympus", action: ScheduleAction.COMMAND, text: " " }),
      Code.InvalidArgument,
    );
    assert.match(bad.rawMessage, /cron: must have five fields/);
    assert.match(bad.rawMessage, /timeZone: "Mars\/Olympus" is not a time zone/);
    assert.match(bad.rawMessage, /text: the command to run is needed/);
    await rejectsWith(servers().createSchedule({ serverId, ...terms, cron: "99 4 * * *" }), Code.InvalidArgument);

    const { schedule: updated } = await servers().updateSchedule({ scheduleId: schedule!.id, ...terms, name: "Off for now", enabled: false });
    assert.deepEqual([updated!.name, updated!.nextRuns.length], ["Off for now", 0]);
    assert.deepEqual(
      (await servers().listSchedules({ serverId })).schedules.map((s) => s.name),
      ["Off for now"],
    );
    await servers().deleteSchedule({ scheduleId: schedule!.id });
    assert.deepEqual((await servers().listSchedules({ serverId })).schedules, []);
    const { events } = await t.client(ActivityService, { session }).listOrganizationActivity({ organizationSlug: "acme", serverId, action: "server" });
    assert.deepEqual(
      events
        .map((e) => e.action)
        .filter((a) => a.startsWith("server.schedule_"))
        .reverse(),
      ["server.schedule_created", "server.schedule_updated", "server.schedule_deleted"],
    );
  });

  it("is for owners and admins: a member is refused, an outsider finds nothing", async () => {
    const serverId = await connectedServer("Guarded");
    const { schedule } = await servers().createSchedule({ serverId, ...terms });
    const member = await t.signUp("member@example.com");
    await joinOrganization(t, { token: session }, "acme", member, Role.MEMBER);
    const asMember = t.client(ServersService, { session: member.token });
    await rejectsWith(asMember.listSchedules({ serverId }), Code.PermissionDenied);
    await rejectsWith(asMember.runScheduleNow({ scheduleId: schedule!.id }), Code.PermissionDenied);
    const outsider = t.client(ServersService, { session: (await t.signUp("outsider@example.com")).token });
    await rejectsWith(outsider.deleteSchedule({ scheduleId: schedule!.id }), Code.NotFound);
    assert.equal((await servers().listSchedules({ serverId })).schedules.length, 1);
  });

  it("warns the players before a restart, each warning once, then restarts the server at its time", async () => {
    const serverId = await connectedServer("Warned");
    const { schedule } = await servers().createSchedule({ serverId, ...terms });
    const id = schedule!.id;
    const now = () => t.clock.now().getTime();
    await dueAt(id, new Date(now() + 9.5 * 60_000));
    await runDueSchedules(t.deps);
    await runDueSchedules(t.deps);
    assert.deepEqual(ran, ["say Server restarting in 10 minutes"]);
    // The 5- and 1-minute warnings as their times come (the due time stays; the warnings sent stay sent).
    await sql(`update server_schedules set next_run_at = ? where id = ?`, [new Date(now() + 4.5 * 60_000), id]);
    await runDueSchedules(t.deps);
    await sql(`update server_schedules set next_run_at = ? where id = ?`, [new Date(now() + 30_000), id]);
    await runDueSchedules(t.deps);
    assert.deepEqual(ran, ["say Server restarting in 10 minutes", "say Server restarting in 5 minutes", "say Server restarting in 1 minute"]);
    const due = new Date(Math.floor(now() / 60_000) * 60_000);
    await sql(`update server_schedules set next_run_at = ?, cron = '* * * * *' where id = ?`, [due, id]);
    await runDueSchedules(t.deps);
    assert.deepEqual(asked, [LifecycleAction.RESTART]);
    const [run] = await runs(id);
    assert.deepEqual([run.outcome, run.detail, timestampDate(run.scheduledFor!).getTime()], [ScheduleRunOutcome.OK, "stopping: stop sent", due.getTime()]);
    const [next] = (await servers().listSchedules({ serverId })).schedules[0].nextRuns;
    assert.ok(timestampDate(next) > due, "moved on to its next time");
  });

  it("runs a run missed while no instance was up once, late, within the grace period, and skips one later than that — both recorded", async () => {
    const serverId = await connectedServer("Missed");
    const { schedule } = await servers().createSchedule({ serverId, ...terms, cron: "* * * * *", action: ScheduleAction.BROADCAST, text: "hello" });
    const minute = Math.floor(t.clock.now().getTime() / 60_000) * 60_000;
    // Due three minutes ago: no instance was up. One starts its runner, which looks at once.
    await dueAt(schedule!.id, new Date(minute - 3 * 60_000));
    const runner = startScheduleRunner(t.deps, 60_000);
    await runner.stop();
    const [late, skipped] = await runs(schedule!.id);
    // The latest time is this minute, or the next should the minute turn meanwhile; those between are skipped.
    const latest = timestampDate(late.scheduledFor!).getTime();
    assert.ok(latest === minute || latest === minute + 60_000, "the latest time, run once");
    assert.equal(late.outcome, ScheduleRunOutcome.OK);
    assert.deepEqual([skipped.outcome, timestampDate(skipped.scheduledFor!).getTime()], [ScheduleRunOutcome.SKIPPED, minute - 3 * 60_000]);
    const between = (latest - (minute - 3 * 60_000)) / 60_000 - 1;
    assert.match(
      skipped.detail,
      new RegExp(`^missed: not run at .*, and ${between} later times \\(no Outpost instance was up, or the server's agent stayed offline\\)$`),
    );

    // A yearly run missed by months is beyond the grace period: skipped, and the next is next year's.
    const { schedule: yearly } = await servers().createSchedule({ serverId, ...terms, name: "New year", cron: "0 0 1 1 *", timeZone: "UTC" });
    const lastNewYear = new Date(Date.UTC(t.clock.now().getUTCFullYear(), 0, 1));
    await dueAt(yearly!.id, lastNewYear);
    await runDueSchedules(t.deps);
    const [only, ...none] = await runs(yearly!.id);
    assert.deepEqual([only.outcome, none.length, asked.length], [ScheduleRunOutcome.SKIPPED, 0, 0]);
    const [next] = (await servers().listSchedules({ serverId })).schedules.find((s) => s.id === yearly!.id)!.nextRuns;
    assert.equal(timestampDate(next).toISOString(), new Date(Date.UTC(lastNewYear.getUTCFullYear() + 1, 0, 1)).toISOString());
    const { events } = await t.client(ActivityService, { session }).listOrganizationActivity({ organizationSlug: "acme", serverId, action: "server.schedule_skipped" });
    assert.equal(events.length, 2);
  });

  it("waits for an agent that is not connected up to the grace period after its time, then runs and says the agent is offline", async () => {
    const serverId = await connectedServer("Away");
    const { schedule } = await servers().createSchedule({ serverId, ...terms, cron: "* * * * *", action: ScheduleAction.BROADCAST, text: "hi" });
    await Promise.all(agents.splice(0).map((a) => a.stop()));
    const minute = Math.floor(t.clock.now().getTime() / 60_000) * 60_000;
    await dueAt(schedule!.id, new Date(minute));
    await runDueSchedules(t.deps);
    assert.deepEqual(await runs(schedule!.id), [], "it waits for the agent");
    // Past the grace period after the time it was due: it goes ahead, and fails for want of the agent.
    const due = new Date(minute - 11 * 60_000);
    await dueAt(schedule!.id, due);
    await runDueSchedules(t.deps);
    const [failed, skipped] = await runs(schedule!.id);
    assert.deepEqual([failed.outcome, failed.detail], [ScheduleRunOutcome.FAILED, "the server's agent is offline"]);
    assert.equal(timestampDate(skipped.scheduledFor!).getTime(), due.getTime());
    const [next] = (await servers().listSchedules({ serverId })).schedules[0].nextRuns;
    assert.ok(timestampDate(next) > t.clock.now(), "moved on");
  });

  it("runs a schedule by hand at once, in the name of the person, and says why a run failed", async () => {
    const serverId = await connectedServer("By hand");
    const { schedule } = await servers().createSchedule({ serverId, ...terms, action: ScheduleAction.COMMAND, text: "/save-all" });
    const { run } = await servers().runScheduleNow({ scheduleId: schedule!.id });
    assert.deepEqual([run!.outcome, run!.manual, run!.detail], [ScheduleRunOutcome.OK, true, "ran save-all"]);
    assert.deepEqual(ran, ["save-all"]);
    await Promise.all(agents.splice(0).map((a) => a.stop()));
    const { run: offline } = await servers().runScheduleNow({ scheduleId: schedule!.id });
    assert.deepEqual([offline!.outcome, offline!.detail], [ScheduleRunOutcome.FAILED, "the server's agent is offline"]);
    const { events } = await t.client(ActivityService, { session }).listOrganizationActivity({ organizationSlug: "acme", serverId, action: "server.schedule_ran" });
    assert.deepEqual(events.map((e) => [e.actor?.email, e.details.outcome, e.details.manual]).reverse(), [
      ["owner@example.com", "ok", "true"],
      ["owner@example.com", "failed", "true"],
    ]);
  });

  onPostgresServer(() =>
    it("runs once however many instances look at the same moment, wherever the agent is connected", async () => {
      const others = await Promise.all([1, 2].map(() => startTestCore(config, { database: t.database })));
      cores.push(...others);
      const serverId = await connectedServer("Busy", others[0]);
      const { schedule } = await servers().createSchedule({ serverId, ...terms, cron: "* * * * *", action: ScheduleAction.BROADCAST, text: "once" });
      for (let round = 0; round < 5; round++) {
        const minute = Math.floor(t.clock.now().getTime() / 60_000) * 60_000;
        await dueAt(schedule!.id, new Date(minute));
        await sql(`delete from schedule_runs where schedule_id = ?`, [schedule!.id]);
        ran.length = 0;
        await Promise.all([t, ...others].map((core) => runDueSchedules(core.deps)));
        assert.deepEqual(ran, ["say once"], `round ${round}: one run`);
        const all = await runs(schedule!.id);
        assert.deepEqual(
          all.map((r) => r.outcome),
          [ScheduleRunOutcome.OK],
        );
      }
    }),
  );
});
