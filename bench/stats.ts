/**
 * npm run bench:stats — server statistics on a real PostgreSQL (DATABASE_URL, a fresh database;
 * the embedded database without it):
 *
 * 1. samples/s written: simulated agents of BENCH_SERVERS servers (default 1,000) hand samples to
 *    the instance's batching writer (core/stats/ingest.ts) as fast as it takes them, for
 *    BENCH_SECONDS (default 60; 300 for the 10-minute memory check), with reads (below) meanwhile;
 * 2. servers/getServerStats for 30 days at 15-minute steps (the quarter-hour rollups, seeded for a
 *    month for 200 servers), one after another, while the same agents write BENCH_RATE samples a
 *    second (default 20,000, the target rate; 1,000 servers sampled every 10 s send 100), for
 *    BENCH_SECONDS: p50, p99. Written flat out, the writer shares this one process's thread with
 *    the reads, which then wait behind it;
 * 3. the process's heap and RSS every 10 s over both, first and last: flat means the writer holds
 *    nothing back.
 *
 * Targets (issue 30): ≥ 20,000 samples/s, getServerStats p99 ≤ 50 ms, memory flat. Prints figures;
 * a missed target is printed as such and the run exits 0 (the machine decides); an error exits 1.
 */
import { randomUUID } from "node:crypto";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { ServersService, StatsMetric } from "../gen/outpost/servers/v1/servers_service_pb.js";
import { OrganizationsService } from "../gen/outpost/organizations/v1/organizations_service_pb.js";
import { Game } from "../gen/outpost/servers/v1/resources_pb.js";
import { ensurePartitions } from "../core/stats/partitions.ts";
import { startTestCore, testConfig } from "../test/support/core.ts";

const seconds = Number(process.env.BENCH_SECONDS ?? 60);
const serverCount = Number(process.env.BENCH_SERVERS ?? 1000);
const pacedRate = Number(process.env.BENCH_RATE ?? 20_000);
const seededServers = 200;
const day = 24 * 3600_000;

const t = await startTestCore({ ...testConfig, plans: { free: { ...testConfig.plans.free, servers: 10 } } });
let failed = false;
try {
  const session = (await t.signUp("bench@example.com")).token;
  await t.client(OrganizationsService, { session }).createOrganization({ name: "Bench", slug: "bench" });
  const servers = t.client(ServersService, { session });
  const { server } = await servers.createServer({ organizationSlug: "bench", name: "Read", game: Game.MINECRAFT });
  const readId = server!.id;

  // A month of quarter hours for the server read and 199 others.
  const now = t.clock.now();
  const conn = t.orm.em.fork().getConnection();
  for (let at = now.getTime() - 32 * day; at <= now.getTime(); at += 28 * day) await ensurePartitions(t.deps.statements.on(t.orm.em.fork()), new Date(at));
  await ensurePartitions(t.deps.statements.on(t.orm.em.fork()), now);
  const ids = [readId, ...Array.from({ length: seededServers - 1 }, () => randomUUID())];
  const seedStarted = performance.now();
  await conn.execute(
    `insert into server_stats_15m (server_id, bucket, samples, cpu_avg, cpu_max, memory_avg, memory_max, players_avg, players_max, tps_avg, tps_min, mspt_avg, mspt_max, disk_max)
     select id::uuid, b, 90, random() * 100, 100, 4e9, 5e9, 10, 20, 19.5, 15, 20, 45, 2e10
     from unnest(string_to_array(?, ',')) id, generate_series(date_bin('15 minutes', now() - interval '31 days', timestamptz 'epoch'), now() - interval '15 minutes', interval '15 minutes') b`,
    [ids.join(",")],
  );
  console.log(`seeded ${seededServers} servers × 31 days of quarter hours in ${((performance.now() - seedStarted) / 1000).toFixed(1)} s`);

  const sampleIds = Array.from({ length: serverCount }, () => randomUUID());
  const mb = (n: number) => `${(n / 1024 / 1024).toFixed(0)} MiB`;

  /** Writes samples (as fast as the writer takes them, or `rate` a second) while reading a month, for `seconds`. */
  async function phase(rate: number | undefined) {
    let written = 0;
    let stop = false;
    const memory: Array<{ at: number; heap: number; rss: number }> = [];
    const started = performance.now();
    const ingest = (async () => {
      while (!stop) {
        // A round: one sample from each simulated agent, handed to the writer, which batches them.
        for (const id of sampleIds) t.deps.stats.add(id, { cpuPercent: 50, memoryBytes: 4_000_000_000n, players: 7, tps: 19.9, mspt: 21 });
        await t.deps.stats.flush();
        written += sampleIds.length;
        // Paced: the next round when the rate allows it.
        if (rate) await new Promise((resolve) => setTimeout(resolve, Math.max(0, (written / rate) * 1000 - (performance.now() - started))));
      }
    })();
    const latencies: number[] = [];
    const reads = (async () => {
      while (!stop) {
        const at = performance.now();
        await servers.getServerStats({
          serverId: readId,
          from: timestampFromDate(new Date(t.clock.now().getTime() - 30 * day)),
          to: timestampFromDate(t.clock.now()),
          stepSeconds: 900,
          metrics: [StatsMetric.CPU, StatsMetric.TPS, StatsMetric.PLAYERS, StatsMetric.MEMORY],
        });
        latencies.push(performance.now() - at);
      }
    })();
    const watch = setInterval(() => {
      const m = process.memoryUsage();
      memory.push({ at: (performance.now() - started) / 1000, heap: m.heapUsed, rss: m.rss });
    }, 10_000);
    await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
    stop = true;
    await Promise.all([ingest, reads]);
    clearInterval(watch);
    latencies.sort((a, b) => a - b);
    const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor((latencies.length * p) / 100))];
    return { rate: written / ((performance.now() - started) / 1000), reads: latencies.length, p50: pct(50), p99: pct(99), memory };
  }

  const flat = await phase(undefined);
  console.log(`samples written as fast as taken: ${flat.rate.toFixed(0)}/s (target ≥ 20,000) ${flat.rate >= 20_000 ? "met" : "NOT MET"}`);
  console.log(`  getServerStats meanwhile (30 days at 15 min, 4 metrics): ${flat.reads} reads, p50 ${flat.p50.toFixed(1)} ms, p99 ${flat.p99.toFixed(1)} ms`);
  const paced = await phase(pacedRate);
  console.log(
    `getServerStats while writing ${pacedRate}/s (${paced.rate.toFixed(0)}/s written): ${paced.reads} reads, p50 ${paced.p50.toFixed(1)} ms, p99 ${paced.p99.toFixed(1)} ms (target ≤ 50) ${paced.p99 <= 50 ? "met" : "NOT MET"}`,
  );
  const memory = [...flat.memory, ...paced.memory];
  if (memory.length >= 2) {
    const [first, last] = [memory[0], memory.at(-1)!];
    console.log(`memory over both: heap ${mb(first.heap)} → ${mb(last.heap)}; rss ${mb(first.rss)} → ${mb(last.rss)}`);
  }
} catch (error) {
  failed = true;
  console.error(error);
} finally {
  await t.close();
}
process.exit(failed ? 1 : 0);
