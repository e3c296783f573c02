import assert from "node:assert/strict";
import { Code } from "@connectrpc/connect";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { AlertCondition, AlertsService, type AlertRuleSpecSchema } from "../../gen/outpost/alerts/v1/alerts_service_pb.js";
import { ActivityKind } from "../../gen/outpost/activity/v1/activity_service_pb.js";
import { ActivityService } from "../../gen/outpost/activity/v1/activity_service_pb.js";
import { ServersService } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { Game, PlayerAuth } from "../../gen/outpost/servers/v1/resources_pb.js";
import { startAgent, type Agent } from "../../agent/client.ts";
import { checkThresholds } from "../../core/alerts/thresholds.ts";
import { insertSamples } from "../../core/stats/ingest.ts";
import { ensurePartitions } from "../../core/stats/partitions.ts";
import { startTestCore, testConfig, type TestCore } from "../support/core.ts";
import { acmeWithMembers, type AcmeCast } from "../support/fixtures.ts";
import { rejectsWith } from "../support/errors.ts";

/**
 * Alert rules with a threshold on a real database: each minute's check (driven here by calling it)
 * reads the samples and the game state, says once that a condition started to hold and once that
 * it stopped, and those events reach their own rule only; the memory limit is the agent's.
 */
describe("alerts: thresholds", function () {
  this.timeout(60_000);
  let t: TestCore;
  let cast: AcmeCast;
  let serverId: string;
  let agentKey: string;
  const agents: Agent[] = [];
  const acme = { organizationSlug: "acme" };
  const alerts = () => t.client(AlertsService, { session: cast.owner.token });
  const query = () => t.deps.statements.on(t.orm.em.fork());
  /** A rule watching `threshold` on the server (null: on every server of the organization). */
  const rule = async (threshold: MessageInitShape<typeof AlertRuleSpecSchema>["threshold"], server: string | null = serverId) =>
    (await alerts().createAlertRule({ ...acme, spec: { name: "Watch", enabled: true, serverId: server ?? undefined, notifyDashboard: true, threshold } })).rule!.id;
  const deliveries = async (ruleId: string) => (await alerts().listAlertDeliveries({ ...acme, ruleId })).deliveries.map((d) => d.action);
  const check = () => checkThresholds({ orm: t.orm, clock: t.clock });
  const ago = (ms: number) => new Date(t.clock.now().getTime() - ms);
  /** Samples every 10 s from `fromMs` ago until now. */
  const samples = async (fromMs: number, values: { tps?: number; memory?: number }) => {
    await ensurePartitions(query(), ago(fromMs));
    const rows = [];
    for (let back = fromMs; back >= 0; back -= 10_000) {
      rows.push({
        serverId,
        at: ago(back),
        cpu: 10,
        memory: values.memory === undefined ? null : String(values.memory),
        players: 1,
        tps: values.tps ?? null,
        mspt: null,
        disk: null,
      });
    }
    await insertSamples(query(), rows);
  };
  const clearSamples = () => t.orm.em.fork().getConnection().execute(`delete from server_samples where server_id = ?`, [serverId]);

  before(async () => {
    t = await startTestCore(testConfig);
    cast = await acmeWithMembers(t);
    const created = await t.client(ServersService, { session: cast.owner.token }).createServer({ ...acme, name: "Watched", game: Game.MINECRAFT });
    serverId = created.server!.id;
    agentKey = created.agentKey;
  });
  afterEach(async () => {
    await Promise.all(agents.splice(0).map((a) => a.stop()));
    await clearSamples();
    await t.orm.em.fork().getConnection().execute(`delete from alert_rules`);
  });
  after(async () => {
    await t?.close();
  });

  it("TPS below 15 for 2 minutes: crossed once while it holds, cleared once when it stops, to its own rule only", async () => {
    const watch = await rule({ condition: AlertCondition.TPS_BELOW, value: 15, minutes: 2 });
    const everything = (await alerts().createAlertRule({ ...acme, spec: { name: "Everything", enabled: true, notifyDashboard: true } })).rule!.id;
    await samples(60_000, { tps: 9 });
    await check();
    assert.deepEqual(await deliveries(watch), [], "a minute of lag is not two");
    await clearSamples();
    await samples(150_000, { tps: 9 });
    await check();
    await check();
    assert.deepEqual(await deliveries(watch), ["server.threshold_crossed"], "said once");
    const { events } = await t.client(ActivityService, { session: cast.owner.token }).listOrganizationActivity({ ...acme, action: "server.threshold_crossed" });
    assert.deepEqual(events[0].details, { ruleId: watch, rule: "Watch", condition: "tps_below", value: "15", minutes: "2", observed: "9" });
    assert.equal(events[0].kind, ActivityKind.STATUS);

    await samples(0, { tps: 19.5 });
    await check();
    assert.deepEqual(await deliveries(watch), ["server.threshold_cleared", "server.threshold_crossed"]);
    assert.ok(!(await deliveries(everything)).some((a) => a.startsWith("server.threshold")), "another rule does not match them");
    await t.client(ServersService, { session: cast.owner.token }).updateServer({ serverId, name: "Watched again" });
    assert.equal((await deliveries(watch)).length, 2, "a threshold rule matches no other event");
  });

  it("memory above 90 % of the limit the agent reported, and no samples for 5 minutes", async () => {
    const agent = startAgent({
      url: "http://in-process",
      key: agentKey,
      game: Game.MINECRAFT,
      playerAuth: PlayerAuth.ONLINE,
      reconnect: false,
      transport: t.core.transport(),
    });
    agents.push(agent);
    await agent.connected();
    agent.reportStats({ memoryBytes: 100n, memoryLimitBytes: 4_000_000_000n });
    for (let i = 0; ; i++) {
      const [stored] = await t.orm.em.fork().getConnection().execute(`select memory_limit_bytes::text as limit from servers where id = ?`, [serverId]);
      if (stored.limit === "4000000000") break;
      assert.ok(i < 100, "the limit is stored");
      await new Promise((r) => setTimeout(r, 20));
    }
    const memory = await rule({ condition: AlertCondition.MEMORY_ABOVE_PERCENT, value: 90, minutes: 3 });
    await samples(200_000, { memory: 3_500_000_000 });
    await check();
    assert.deepEqual(await deliveries(memory), [], "87.5 % is not above 90 %");
    await clearSamples();
    await samples(200_000, { memory: 3_800_000_000 });
    await check();
    assert.deepEqual(await deliveries(memory), ["server.threshold_crossed"]);

    const silent = await rule({ condition: AlertCondition.NO_SAMPLES, minutes: 5 });
    await clearSamples();
    await ensurePartitions(query(), ago(10 * 60_000));
    await insertSamples(query(), [{ serverId, at: ago(10 * 60_000), cpu: 1, memory: null, players: 0, tps: null, mspt: null, disk: null }]);
    await check();
    assert.deepEqual(await deliveries(silent), ["server.threshold_crossed"], "ten minutes without a sample");
    assert.deepEqual(await deliveries(memory), ["server.threshold_cleared", "server.threshold_crossed"], "no memory figures in the window: cleared");
  });

  it("crash loop and stopped unexpectedly follow the game state; a paused rule forgets its state", async () => {
    const loop = await rule({ condition: AlertCondition.CRASH_LOOP });
    const crashed = await rule({ condition: AlertCondition.STOPPED_UNEXPECTEDLY });
    const setState = (state: string, detail: string) =>
      t.orm.em.fork().getConnection().execute(`update servers set game_state = ?, game_state_detail = ? where id = ?`, [state, detail, serverId]);
    await setState("crashed", "exit code 1; starting it again in 5 s");
    await check();
    assert.deepEqual([await deliveries(loop), await deliveries(crashed)], [[], ["server.threshold_crossed"]]);
    await setState("crashed", "exit code 1, the 5th time within ten minutes: a crash loop, not started again");
    await check();
    assert.deepEqual(await deliveries(loop), ["server.threshold_crossed"]);
    const paused = (await alerts().listAlertRules(acme)).rules.find((r) => r.id === loop)!;
    await alerts().updateAlertRule({ ...acme, ruleId: loop, spec: { ...paused.spec!, enabled: false } });
    await setState("running", "");
    await check();
    assert.deepEqual(await deliveries(loop), ["server.threshold_crossed"], "paused: nothing more");
    assert.deepEqual(await deliveries(crashed), ["server.threshold_cleared", "server.threshold_crossed"]);
  });

  it("refuses a threshold with kinds, a value or minutes out of range for its condition", async () => {
    const spec = (threshold: MessageInitShape<typeof AlertRuleSpecSchema>["threshold"], more: { kinds?: ActivityKind[] } = {}) =>
      alerts().createAlertRule({ ...acme, spec: { name: "Bad", enabled: true, notifyDashboard: true, threshold, ...more } });
    const field = async (call: Promise<unknown>) => (await rejectsWith(call, Code.InvalidArgument)).rawMessage;
    assert.match(
      await field(spec({ condition: AlertCondition.TPS_BELOW, value: 15, minutes: 5 }, { kinds: [ActivityKind.STATUS] })),
      /spec\.kinds: a rule with a threshold/,
    );
    assert.match(await field(spec({ condition: AlertCondition.TPS_BELOW, value: 0, minutes: 5 })), /spec\.threshold\.value: must be from 0\.1 to 20/);
    assert.match(await field(spec({ condition: AlertCondition.TPS_BELOW, value: 15, minutes: 0 })), /spec\.threshold\.minutes: must be from 1 to 1440/);
    assert.match(await field(spec({ condition: AlertCondition.CRASH_LOOP, minutes: 5 })), /spec\.threshold\.minutes: must be 0 for crash_loop/);
    assert.match(await field(spec({ condition: AlertCondition.UNSPECIFIED })), /threshold\.condition/);
    const kept = await rule({ condition: AlertCondition.TPS_BELOW, value: 12.5, minutes: 10 }, null);
    const { rules } = await alerts().listAlertRules(acme);
    assert.deepEqual(
      { ...rules.find((r) => r.id === kept)!.spec!.threshold, $typeName: undefined },
      { $typeName: undefined, condition: AlertCondition.TPS_BELOW, value: 12.5, minutes: 10 },
    );
  });
});
