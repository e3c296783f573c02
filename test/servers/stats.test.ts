import assert from "node:assert/strict";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { StatsColumns } from "../../gen/outpost/stats/v1/stats_pb.js";
import { Code } from "@connectrpc/connect";
import { OrganizationsService } from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { Role, ServerAction } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { joinOrganization } from "../support/fixtures.ts";
import { ServersService, StatsMetric } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { Game, PlayerAuth } from "../../gen/outpost/servers/v1/resources_pb.js";
import { startAgent, type Agent } from "../../agent/client.ts";
import { insertSamples } from "../../core/stats/ingest.ts";
import { dropOldPartitions, ensurePartitions, defaultRetention } from "../../core/stats/partitions.ts";
import { rollUp } from "../../core/stats/rollup.ts";
import { startTestCore, testConfig, type TestCore } from "../support/core.ts";
import { rejectsWith } from "../support/errors.ts";

/**
 * A server's statistics from sample to rollup to servers/getServerStats, on a real database: what
 * the agent library reports arrives in the samples; the minute and quarter-hour rollups agree with
 * the samples they fold; each range is read at the resolution it needs; old partitions are dropped
 * whole.
 */
describe("servers: statistics", function () {
  this.timeout(60_000);
  let t: TestCore;
  let session: string;
  let serverId: string;
  let agentKey: string;
  const agents: Agent[] = [];
  const servers = () => t.client(ServersService, { session });
  const query = () => t.deps.statements.on(t.orm.em.fork());
  const stats = (from: Date, to: Date, stepSeconds = 0, metrics: StatsMetric[] = []) =>
    servers().getServerStats({ serverId, from: timestampFromDate(from), to: timestampFromDate(to), stepSeconds, metrics });
  const minute = 60_000;
  /** A series' columns as points, to read them one at a time. */
  const pointsOf = (c: StatsColumns | undefined) => (c?.atSeconds ?? []).map((at, i) => ({ at: new Date(at * 1000), value: c!.values[i], worst: c!.worst[i] }));

  before(async () => {
    t = await startTestCore(testConfig);
    session = (await t.signUp("owner@example.com")).token;
    await t.client(OrganizationsService, { session }).createOrganization({ name: "Acme", slug: "acme" });
    const created = await servers().createServer({ organizationSlug: "acme", name: "Survival", game: Game.MINECRAFT });
    serverId = created.server!.id;
    agentKey = created.agentKey;
  });
  afterEach(async () => {
    await Promise.all(agents.splice(0).map((a) => a.stop()));
  });
  after(async () => {
    await t?.close();
  });

  it("keeps what the agent reports and reads it back, a point per step with its average and worst", async () => {
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
    agent.setPlayers([{ uuid: "9b1deb4d-3b7d-4bad-9bdd-2b0d7b3dcb6d", name: "Steve" }]);
    const start = t.clock.now();
    agent.reportStats({ cpuPercent: 40, memoryBytes: 1_000n, tps: 20, mspt: 10 });
    agent.reportStats({ cpuPercent: 80, memoryBytes: 3_000n, tps: 15, mspt: 30, diskBytes: 5_000_000n });
    for (let i = 0; i < 50; i++) {
      await t.deps.stats.flush();
      const n = await t.orm.em.fork().getConnection().execute(`select count(*)::int as n from server_samples where server_id = ?`, [serverId]);
      if (n[0].n === 2) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const read = await stats(new Date(start.getTime() - minute), new Date(start.getTime() + minute), 120);
    assert.deepEqual([read.stepSeconds, read.resolution], [120, "1m"], "a 2-minute step is read from the minute rollups");
    const fine = await stats(new Date(start.getTime() - minute), new Date(start.getTime() + minute), 0);
    assert.equal(fine.resolution, "samples");
    const point = (metric: StatsMetric) => {
      const points = pointsOf(fine.series.find((s) => s.metric === metric)!.points);
      assert.equal(points.length >= 1, true, `points of ${StatsMetric[metric]}`);
      const all = points.map((p) => [p.value, p.worst]);
      return points.length === 1 ? all[0] : all;
    };
    // The two samples share a 10-second step unless a step boundary fell between them.
    if (pointsOf(fine.series[0].points).length === 1) {
      assert.deepEqual(point(StatsMetric.CPU), [60, 80]);
      assert.deepEqual(point(StatsMetric.MEMORY), [2000, 3000]);
      assert.deepEqual(point(StatsMetric.TPS), [17.5, 15], "the worst TPS is the lowest");
      assert.deepEqual(point(StatsMetric.MSPT), [20, 30]);
      assert.deepEqual(point(StatsMetric.PLAYERS), [1, 1], "the players last reported");
      assert.deepEqual(point(StatsMetric.DISK), [5_000_000, 5_000_000]);
    }
    const onlyCpu = await stats(new Date(start.getTime() - minute), new Date(start.getTime() + minute), 0, [StatsMetric.CPU]);
    assert.deepEqual(
      onlyCpu.series.map((s) => s.metric),
      [StatsMetric.CPU],
    );
  });

  it("folds samples into minutes and quarter hours that agree with them, and reads a long range from the rollups", async () => {
    const now = t.clock.now();
    const base = new Date(Math.floor((now.getTime() - 3 * 3600_000) / (15 * minute)) * 15 * minute);
    const rows = [];
    for (let i = 0; i < 6 * 30; i++) {
      // Every 10 s for half an hour: CPU rising 0..179, TPS 20 but for a dip to 5 in the 2nd minute.
      const at = new Date(base.getTime() + i * 10_000);
      rows.push({ serverId, at, cpu: i, memory: String(1_000 + i), players: i % 4, tps: i >= 6 && i < 12 ? 5 : 20, mspt: 50, disk: null });
    }
    await ensurePartitions(query(), base);
    await ensurePartitions(query(), now);
    await insertSamples(query(), rows);
    await t.orm.em.fork().getConnection().execute(`delete from stats_rollups`);
    await rollUp(query(), now, defaultRetention);

    const minutes = await stats(base, new Date(base.getTime() + 30 * minute), 60, [StatsMetric.CPU, StatsMetric.TPS]);
    assert.equal(minutes.resolution, "1m");
    const cpu = pointsOf(minutes.series[0].points);
    assert.equal(cpu.length, 30);
    assert.deepEqual([cpu[0].value, cpu[0].worst, cpu[29].value, cpu[29].worst], [2.5, 5, 176.5, 179]);
    const tps = pointsOf(minutes.series[1].points);
    assert.deepEqual([tps[1].value, tps[1].worst], [5, 5]);

    const quarters = await stats(base, new Date(base.getTime() + 30 * minute), 900, [StatsMetric.CPU, StatsMetric.MEMORY, StatsMetric.TPS]);
    assert.equal(quarters.resolution, "1m", "within the minute rollups' days, a 15-minute step is made of them");
    const [q1, q2] = pointsOf(quarters.series[0].points);
    assert.deepEqual([q1.value, q1.worst, q2.value, q2.worst], [44.5, 89, 134.5, 179]);
    assert.deepEqual([q1.at.getTime(), q2.at.getTime()], [base.getTime(), base.getTime() + 15 * minute]);
    assert.equal(quarters.series[2].points!.worst[0], 5);

    // The 15-minute rollups hold the same figures.
    type Folded = { samples: number; cpu_avg: number; cpu_max: number; tps_min: number };
    const folded = (await t.orm.em
      .fork()
      .getConnection()
      .execute(`select samples, cpu_avg, cpu_max, tps_min from server_stats_15m where server_id = ? order by bucket`, [serverId])) as Folded[];
    assert.deepEqual(
      folded.filter((r) => r.samples === 90).map((r) => [r.cpu_avg, r.cpu_max, r.tps_min]),
      [
        [44.5, 89, 5],
        [134.5, 179, 20],
      ],
    );
    // Folding again changes nothing.
    await t.orm.em.fork().getConnection().execute(`delete from stats_rollups`);
    await rollUp(query(), now, defaultRetention);
    const again = await stats(base, new Date(base.getTime() + 30 * minute), 900, [StatsMetric.CPU]);
    assert.deepEqual(again.series[0].points!.values, [44.5, 134.5]);
  });

  it("refuses a range that ends before it starts, or too many points; drops a day's samples whole once older than kept", async () => {
    const now = t.clock.now();
    await rejectsWith(stats(now, new Date(now.getTime() - minute)), Code.InvalidArgument);
    await rejectsWith(stats(new Date(now.getTime() - 40 * 24 * 3600_000), now, 10), Code.InvalidArgument);

    const old = new Date(now.getTime() - 4 * 24 * 3600_000);
    await ensurePartitions(query(), old);
    await insertSamples(query(), [{ serverId, at: old, cpu: 1, memory: null, players: null, tps: null, mspt: null, disk: null }]);
    const dropped = await dropOldPartitions(query(), now, defaultRetention);
    const day = old.toISOString().slice(0, 10).replaceAll("-", "");
    assert.ok(dropped.includes(`server_samples_p${day}`), `dropped ${dropped.join(", ")}`);
    assert.ok(!dropped.some((name) => name.startsWith("server_stats_1m_p") && name.endsWith(day)), "the minute rollups of that day are kept (14 days)");
    const left = await t.orm.em.fork().getConnection().execute(`select count(*)::int as n from server_samples where at = ?`, [old]);
    assert.equal(left[0].n, 0);
  });

  it("adds up players across the organization's servers the caller can see, each server's series beside", async () => {
    const orgs = t.client(OrganizationsService, { session });
    const other = (await servers().createServer({ organizationSlug: "acme", name: "Creative", game: Game.MINECRAFT })).server!.id;
    const base = new Date(Math.floor((t.clock.now().getTime() - 2 * 3600_000) / minute) * minute);
    await ensurePartitions(query(), base);
    const sample = (id: string, at: number, players: number) => ({
      serverId: id,
      at: new Date(base.getTime() + at),
      cpu: null,
      memory: null,
      players,
      tps: null,
      mspt: null,
      disk: null,
    });
    // Two minutes: Survival 2 then 4 players, Creative 1 then 3 (and 5 at the end of the first).
    await insertSamples(query(), [sample(serverId, 0, 2), sample(serverId, minute, 4), sample(other, 0, 1), sample(other, 30_000, 5), sample(other, minute, 3)]);
    await t.orm.em.fork().getConnection().execute(`delete from stats_rollups`);
    await rollUp(query(), t.clock.now(), defaultRetention);
    const range = { from: timestampFromDate(base), to: timestampFromDate(new Date(base.getTime() + 2 * minute)), stepSeconds: 60 };
    const all = await orgs.getOrganizationStats({ organizationSlug: "acme", ...range });
    assert.equal(all.stepSeconds, 60);
    assert.deepEqual(
      pointsOf(all.players).map((p) => [p.at.getTime() - base.getTime(), p.value, p.worst]),
      [
        [0, 5, 7],
        [minute, 7, 7],
      ],
      "the sum of the averages, and of the peaks",
    );
    const byServer = new Map(all.servers.map((s) => [s.serverId, s.players!.values]));
    assert.deepEqual(byServer.get(serverId), [2, 4]);
    assert.deepEqual(byServer.get(other), [3, 3]);

    const member = await t.signUp("member@example.com");
    await joinOrganization(t, { token: session }, "acme", member, Role.MEMBER);
    await orgs.createAccessGrant({ organizationSlug: "acme", userId: member.userId, serverId: other, actions: [ServerAction.VIEW] });
    const granted = await t.client(OrganizationsService, { session: member.token }).getOrganizationStats({ organizationSlug: "acme", ...range });
    assert.deepEqual(
      granted.servers.map((s) => s.serverId),
      [other],
      "a member sees only the servers granted",
    );
    assert.deepEqual(granted.players!.values, [3, 3]);
    await rejectsWith(
      t.client(OrganizationsService, { session: (await t.signUp("outsider@example.com")).token }).getOrganizationStats({ organizationSlug: "acme", ...range }),
      Code.NotFound,
    );
  });
});
