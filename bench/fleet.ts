/**
 * npm run bench:fleet — how many game servers one Outpost instance holds, and what its restart does
 * with all of them connected. A real `outpost serve` on a fresh PostgreSQL database; BENCH_AGENTS
 * agents (default 10,000) of the real agent library, each on its own HTTP/2 connection as real
 * agents are, spread over BENCH_LOADERS load processes (default 4, bench/fleet-load.ts). Prints:
 *
 * 1. the time until all are connected from cold (all started at once), Outpost's RSS and its growth
 *    per connected agent;
 * 2. Outpost's CPU with the fleet idle (heartbeats, presence) for BENCH_IDLE_SECONDS (default 20);
 * 3. kill -9 of the instance and a fresh start on the same port: the time until every agent is
 *    back, the most reconnections a second the load processes saw and the most transactions a
 *    second the database saw (a jittered reconnect, not a thundering herd), the most database
 *    connections in use (against DATABASE_POOL_SIZE + 3), whether any agent gave up, and whether an
 *    API caller polling all the while got a 5xx;
 * 4. a second instance B: servers/executeConsoleCommand through B for servers whose agents A holds,
 *    20 callers for BENCH_CONSOLE_SECONDS (default 10): p50, p99.
 *
 * Targets (issue 31): 10,000 agents within 1 GiB RSS, idle under 10 % of one core, every agent back
 * within 60 s with none giving up and the pool never exhausted, cross-instance console p99 ≤ 30 ms.
 * A missed target is printed as such; the run exits 0 (the machine decides), an error exits 1.
 *
 * Memory: BENCH_STEPS=2 stops after step 2 (for comparing memory and idle CPU run against run).
 * BENCH_HEAP_SNAPSHOTS=dir has Outpost write a V8 heap snapshot with the first load process's agents
 * connected (that one is started first, alone) and another with all of them, and prints what grew
 * per agent added between the two (bench/heap-diff.ts); each snapshot stops Outpost for seconds.
 * BENCH_CPU_PROF=dir has instance A write a CPU profile (--cpu-prof) when it stops.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { printDiff, summarize, takeHeapSnapshot } from "./heap-diff.ts";
import { createBenchDatabase, processCpuMs, seedApiKey, type BenchServer } from "./support.ts";
import { startServe, type ServeProcess } from "../test/support/process.ts";
import { freePort } from "../test/support/outpost.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const agentCount = Number(process.env.BENCH_AGENTS ?? 10_000);
const loaderCount = Number(process.env.BENCH_LOADERS ?? 4);
const idleSeconds = Number(process.env.BENCH_IDLE_SECONDS ?? 20);
const consoleSeconds = Number(process.env.BENCH_CONSOLE_SECONDS ?? 10);
const steps = Number(process.env.BENCH_STEPS ?? 4);
const snapshotDir = process.env.BENCH_HEAP_SNAPSHOTS ? resolve(process.env.BENCH_HEAP_SNAPSHOTS) : undefined;
const poolSize = 10;
const loadScript = fileURLToPath(new URL("./fleet-load.ts", import.meta.url));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MiB`;
const met = (ok: boolean) => (ok ? "met" : "NOT MET");

/** A process's resident memory, from /proc. */
function rssBytes(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8")
    .split("\n")
    .find((l) => l.startsWith("VmRSS:"));
  return Number(line?.split(/\s+/)[1] ?? 0) * 1024;
}

interface Loader {
  child: ChildProcess;
  state: { connected: number; connections: number; gaveUp: number };
}

function startLoader(url: string, keys: string[], dir: string, index: number): Loader {
  const file = join(dir, `keys-${index}.json`);
  writeFileSync(file, JSON.stringify(keys));
  const child = spawn(process.execPath, ["--v8-pool-size=0", loadScript, url, file], { stdio: ["pipe", "pipe", "inherit"] });
  const loader: Loader = { child, state: { connected: 0, connections: 0, gaveUp: 0 } };
  let buffer = "";
  child.stdout!.on("data", (chunk: Buffer) => {
    buffer += chunk;
    const lines = buffer.split("\n");
    buffer = lines.pop()!;
    if (lines.length) loader.state = JSON.parse(lines[lines.length - 1]);
  });
  return loader;
}

/** Waits until the load processes hold `count` agents connected. */
async function connected(loaders: Loader[], count: number, since: number): Promise<void> {
  while (total(loaders, "connected") < count) {
    if (performance.now() - since > 600_000) throw new Error(`only ${total(loaders, "connected")} of ${count} connected after 10 minutes`);
    await sleep(250);
  }
}

const total = (loaders: Loader[], field: keyof Loader["state"]) => loaders.reduce((n, l) => n + l.state[field], 0);

const database = await createBenchDatabase("outpost_fleet");
const dataDir = mkdtempSync(join(tmpdir(), "outpost-fleet-"));
const [port, gamePort] = [await freePort(), await freePort()];
const env: Record<string, string> = {
  DATABASE_URL: database.url,
  KEY_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
  DATA_DIR: dataDir,
  PORT: String(port),
  GAME_PORT: String(gamePort),
  GAME_ISSUER_URL: `http://127.0.0.1:${gamePort}`,
  PLANS: `{"free":{"servers":${agentCount + 10},"gameOAuthClients":2}}`,
  RATE_LIMIT_PER_MINUTE: "1000000",
  DATABASE_POOL_SIZE: String(poolSize),
  METRICS_TOKEN: randomBytes(24).toString("hex"),
};
// BENCH_CPU_PROF=dir: instance A writes a CPU profile there when it stops (with BENCH_STEPS=2, after the idle step).
if (process.env.BENCH_CPU_PROF) env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ""} --cpu-prof --cpu-prof-dir=${resolve(process.env.BENCH_CPU_PROF)}`.trim();
if (snapshotDir) {
  mkdirSync(snapshotDir, { recursive: true });
  env.NODE_OPTIONS = `${env.NODE_OPTIONS ?? process.env.NODE_OPTIONS ?? ""} --heapsnapshot-signal=SIGUSR2 --diagnostic-dir=${snapshotDir}`.trim();
}
const url = `http://127.0.0.1:${port}`;
const admin = new pg.Client({ connectionString: database.url });
let a: ServeProcess | undefined;
let b: ServeProcess | undefined;
const loaders: Loader[] = [];
let failed = false;
/** Outpost's V8 heap in use, from its metrics (answering also means its event loop is free again). */
async function heapUsed(): Promise<number> {
  const text = await (await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${env.METRICS_TOKEN}` } })).text();
  return Number(/^nodejs_heap_size_used_bytes (\S+)$/m.exec(text)?.[1] ?? NaN);
}
try {
  a = await startServe(env);
  await admin.connect();
  const apiKey = await seedApiKey({ env } as BenchServer, "fleet@example.com");
  const api = async (method: "GET" | "POST", path: string, body?: unknown, base = url): Promise<Json> => {
    const res = await fetch(`${base}/api/http/${path}`, {
      method,
      headers: { "x-api-key": apiKey, "content-type": "application/json" },
      body: body ? JSON.stringify(body) : undefined,
    });
    if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
    return res.json();
  };
  await api("POST", "organizations/createOrganization", { name: "Fleet", slug: "fleet" });
  const made = performance.now();
  const servers: Array<{ id: string; key: string }> = [];
  for (let i = 0; i < agentCount; i += 50) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(50, agentCount - i) }, (_, j) =>
        api("POST", "servers/createServer", { organizationSlug: "fleet", name: `Fleet ${i + j}`, game: "minecraft" }),
      ),
    );
    servers.push(...batch.map((r) => ({ id: r.server.id as string, key: r.agentKey as string })));
  }
  console.log(`${agentCount} servers made through the API in ${((performance.now() - made) / 1000).toFixed(1)} s`);

  // 1. From cold.
  const [rssBefore, heapBefore] = [rssBytes(a.child.pid!), await heapUsed()];
  const started = performance.now();
  const share = Math.ceil(agentCount / loaderCount);
  const snapshots: string[] = [];
  for (let i = 0; i < loaderCount; i++) {
    loaders.push(
      startLoader(
        url,
        servers.slice(i * share, (i + 1) * share).map((s) => s.key),
        dataDir,
        i,
      ),
    );
    if (snapshotDir && i === 0) {
      await connected(loaders, Math.min(share, agentCount), started);
      snapshots.push(await takeHeapSnapshot(a.child.pid!, snapshotDir, heapUsed));
    }
  }
  await connected(loaders, agentCount, started);
  const coldSeconds = (performance.now() - started) / 1000;
  await sleep(2_000);
  const [rssConnected, heapConnected] = [rssBytes(a.child.pid!), await heapUsed()];
  const perAgent = (before: number, after: number) => `${((after - before) / agentCount / 1024).toFixed(1)} KiB per agent`;
  console.log(`all ${agentCount} connected from cold in ${coldSeconds.toFixed(1)} s${snapshotDir ? " (with a heap snapshot on the way)" : ""}`);
  console.log(`Outpost RSS ${mib(rssConnected)} (${mib(rssBefore)} before: ${perAgent(rssBefore, rssConnected)}; target ≤ 1 GiB) ${met(rssConnected <= 1024 ** 3)}`);
  console.log(`  V8 heap in use ${mib(heapConnected)} (${mib(heapBefore)} before: ${perAgent(heapBefore, heapConnected)})`);
  if (snapshotDir) {
    snapshots.push(await takeHeapSnapshot(a.child.pid!, snapshotDir, heapUsed));
    console.log(`heap snapshots with ${share} and ${agentCount} agents connected (${snapshots.join(", ")}):`);
    printDiff(summarize(snapshots[0]), summarize(snapshots[1]), 40, agentCount - share);
  }

  // 2. Idle.
  const cpuBefore = processCpuMs(a.child.pid);
  await sleep(idleSeconds * 1000);
  const idlePercent = ((processCpuMs(a.child.pid)! - cpuBefore!) / (idleSeconds * 1000)) * 100;
  console.log(`idle fleet: Outpost used ${idlePercent.toFixed(1)} % of one core over ${idleSeconds} s (target < 10 %) ${met(idlePercent < 10)}`);
  // After the idle time the garbage of connecting is collected: the heap is nearer what the agents keep.
  const [rssIdle, heapIdle] = [rssBytes(a.child.pid!), await heapUsed()];
  console.log(`  then: RSS ${mib(rssIdle)} (${perAgent(rssBefore, rssIdle)}), V8 heap in use ${mib(heapIdle)} (${perAgent(heapBefore, heapIdle)})`);
  // BENCH_STEPS=2: no restart and no second instance.
  if (steps > 2) {
    // 3. kill -9 and a fresh start.
    const statuses: number[] = [];
    let polling = true;
    const poller = (async () => {
      while (polling) {
        const res = await fetch(`${url}/api/http/servers/getServer?serverId=${servers[0].id}`, { headers: { "x-api-key": apiKey } }).catch(() => undefined);
        if (res) statuses.push(res.status);
        await res?.arrayBuffer();
        await sleep(100);
      }
    })();
    const peaks = { connections: 0, transactionsPerSecond: 0, reconnectsPerSecond: 0 };
    let sampling = true;
    const sampler = (async () => {
      let last = { at: performance.now(), transactions: -1, reconnects: total(loaders, "connections") };
      while (sampling) {
        const { rows } = await admin.query(
          `select (select count(*) from pg_stat_activity where datname = current_database())::int as connections,
                (select xact_commit + xact_rollback from pg_stat_database where datname = current_database())::float8 as transactions`,
        );
        const now = performance.now();
        const seconds = (now - last.at) / 1000;
        const reconnects = total(loaders, "connections");
        // One of these connections is this sampler's own.
        peaks.connections = Math.max(peaks.connections, rows[0].connections - 1);
        if (last.transactions >= 0) peaks.transactionsPerSecond = Math.max(peaks.transactionsPerSecond, (rows[0].transactions - last.transactions) / seconds);
        peaks.reconnectsPerSecond = Math.max(peaks.reconnectsPerSecond, (reconnects - last.reconnects) / seconds);
        last = { at: now, transactions: rows[0].transactions, reconnects };
        await sleep(500);
      }
    })();
    const before = total(loaders, "connections");
    a.child.kill("SIGKILL");
    await new Promise((resolve) => a!.child.once("close", resolve));
    const killed = performance.now();
    a = await startServe(env);
    while (total(loaders, "connections") - before < agentCount || total(loaders, "connected") < agentCount) {
      if (performance.now() - killed > 600_000) throw new Error(`only ${total(loaders, "connected")} of ${agentCount} back after 10 minutes`);
      await sleep(250);
    }
    const backSeconds = (performance.now() - killed) / 1000;
    polling = false;
    sampling = false;
    await Promise.all([poller, sampler]);
    const fives = statuses.filter((s) => s >= 500).length;
    const gaveUp = total(loaders, "gaveUp");
    console.log(
      `after kill -9 and a fresh start: every agent back in ${backSeconds.toFixed(1)} s (target ≤ 60 s) ${met(backSeconds <= 60 && gaveUp === 0)}; ${gaveUp} gave up`,
    );
    console.log(
      `  at most ${peaks.reconnectsPerSecond.toFixed(0)} reconnections/s, ${peaks.transactionsPerSecond.toFixed(0)} database transactions/s, ${peaks.connections} database connections in use (pool ${poolSize} + 3) ${met(peaks.connections <= poolSize + 3)}`,
    );
    console.log(`  an API caller meanwhile: ${statuses.length} answers, ${fives} of them 5xx ${met(fives === 0)}`);

    // 4. Console commands through another instance.
    const bPort = await freePort();
    b = await startServe({ ...env, PORT: String(bPort), GAME_PORT: String(await freePort()) });
    const latencies: number[] = [];
    const until = performance.now() + consoleSeconds * 1000;
    await Promise.all(
      Array.from({ length: 20 }, async (_, caller) => {
        for (let i = caller; performance.now() < until; i += 20) {
          const at = performance.now();
          await api("POST", "servers/executeConsoleCommand", { serverId: servers[(i * 7919) % servers.length].id, command: "list" }, `http://127.0.0.1:${bPort}`);
          latencies.push(performance.now() - at);
        }
      }),
    );
    latencies.sort((x, y) => x - y);
    const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor((latencies.length * p) / 100))];
    console.log(
      `executeConsoleCommand through B for agents on A, 20 callers: ${latencies.length} commands, p50 ${pct(50).toFixed(1)} ms, p99 ${pct(99).toFixed(1)} ms (target ≤ 30) ${met(pct(99) <= 30)}`,
    );
  }
} catch (error) {
  failed = true;
  console.error(error);
} finally {
  for (const loader of loaders) loader.child.stdin!.end();
  await Promise.all(loaders.map((l) => new Promise((resolve) => (l.child.exitCode === null ? l.child.once("close", resolve) : resolve(undefined)))));
  await b?.stop();
  await a?.stop();
  await admin.end().catch(() => {});
  await database.drop();
  rmSync(dataDir, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
