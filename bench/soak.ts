/**
 * npm run bench:soak — a long run of mixed load at a fixed rate against a real `outpost serve` on a
 * fresh PostgreSQL database, watching the server's memory and open file descriptors: both must
 * stay flat (a leak shows as a slope). Each round is a dashboard-style read (servers/listServers),
 * a console command through a connected agent, and a whole Account OAuth code → token → userinfo,
 * with the dashboard's live console open throughout, fed a line a second by the agent.
 *
 * Prints a sample every SOAK_SAMPLE_SECONDS (RSS and fds from /proc, the V8 heap in use from the
 * server's own /metrics), then the first and last five minutes' averages and the failures. Resident
 * memory also moves for reasons that are not leaks (the allocator keeping freed pages, code
 * compiled late), so with SOAK_HEAP_SNAPSHOTS=dir the server takes a heap snapshot (after a full
 * collection: the live heap only) once warmed up and again at the end, and the run prints what grew
 * between them (bench/heap-diff.ts). As the other benchmarks, a figure is printed, not asserted; an
 * error answer exits 1.
 *
 * Env: SOAK_SECONDS (default 1800), SOAK_ROUNDS_PER_SECOND (default 20), SOAK_SAMPLE_SECONDS (default 30),
 * SOAK_HEAP_SNAPSHOTS (a directory; off by default: each snapshot stops the server for seconds).
 */
import { randomBytes } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { Game } from "../gen/outpost/servers/v1/resources_pb.js";
import { PlayerAuth, startAgent, type Agent } from "../agent/client.ts";
import { benchPassword, loadAverages, seedApiKey, startBenchServer } from "./support.ts";
import { firstPartyFlow } from "../test/support/first-party.ts";
import { printDiff, summarize, takeHeapSnapshot } from "./heap-diff.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const seconds = Number(process.env.SOAK_SECONDS ?? 1800);
const roundsPerSecond = Number(process.env.SOAK_ROUNDS_PER_SECOND ?? 20);
const sampleSeconds = Number(process.env.SOAK_SAMPLE_SECONDS ?? 30);
const snapshotDir = process.env.SOAK_HEAP_SNAPSHOTS ? resolve(process.env.SOAK_HEAP_SNAPSHOTS) : undefined;
/** When the first heap snapshot is taken: after the warm-up, before the long middle of the run. */
const warmedUpSeconds = Math.round(Math.min(600, seconds / 6));
const redirectUri = "http://127.0.0.1:9/callback";

interface Sample {
  at: number;
  rssMb: number;
  heapMb: number;
  externalMb: number;
  fds: number;
  rounds: number;
}

/** The server's resident memory (MB) and open file descriptors, from /proc. */
function measure(pid: number): { rssMb: number; fds: number } {
  const rssKb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]);
  return { rssMb: rssKb / 1024, fds: readdirSync(`/proc/${pid}/fd`).length };
}

const average = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);

const metricsToken = randomBytes(24).toString("hex");
if (snapshotDir) mkdirSync(snapshotDir, { recursive: true });
const nodeOptions: Record<string, string> = snapshotDir
  ? { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --heapsnapshot-signal=SIGUSR2 --diagnostic-dir=${snapshotDir}`.trim() }
  : {};
const bench = await startBenchServer({ METRICS_TOKEN: metricsToken, ...nodeOptions });

/** The V8 heap in use and the memory outside it (buffers), MB, from the server's own metrics; answering also means its event loop is free. */
async function heapUsedMb(): Promise<{ heapMb: number; externalMb: number }> {
  let text = "";
  // A keep-alive connection the server closed while a snapshot held it up fails once: ask again.
  for (let attempt = 1; ; attempt++) {
    try {
      text = await (await fetch(`${bench.baseUrl}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } })).text();
      break;
    } catch (error) {
      if (attempt === 3) throw error;
    }
  }
  const read = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, "m").exec(text)?.[1] ?? NaN) / 1024 / 1024;
  return { heapMb: read("nodejs_heap_size_used_bytes"), externalMb: read("nodejs_external_memory_bytes") };
}

/** Has the server write a heap snapshot and waits until it has (the server answers again). */
const heapSnapshot = (pid: number) => takeHeapSnapshot(pid, snapshotDir!, heapUsedMb);

let agent: Agent | undefined;
const watcher = new AbortController();
try {
  const key = await seedApiKey(bench, "soak@example.com", true);
  const api = async (method: "GET" | "POST", path: string, body?: unknown): Promise<Json> => {
    const res = await fetch(`${bench.baseUrl}/api/http/${path}`, {
      method,
      headers: { "x-api-key": key, ...(body !== undefined && { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = await res.json();
    if (!res.ok) throw new Error(`${path}: ${res.status} ${JSON.stringify(json)}`);
    return json;
  };
  await api("POST", "organizations/createOrganization", { name: "Soak", slug: "soak" });
  const { server, agentKey } = await api("POST", "servers/createServer", { organizationSlug: "soak", name: "Survival", game: "minecraft" });
  agent = startAgent({
    url: bench.baseUrl,
    key: agentKey,
    game: Game.MINECRAFT,
    playerAuth: PlayerAuth.ONLINE,
    console: async (command) => ({ success: true, output: [`[Server] ran ${command}`] }),
  });
  await agent.connected(10_000);
  const ticker = setInterval(() => agent?.consoleOutput([`[Server] tick ${Date.now()}`]), 1000);

  const client = await api("POST", "admin/createAccountOAuthClient", { name: "Soak app", redirectUris: [redirectUri], skipConsent: true });
  const flow = await firstPartyFlow(bench.baseUrl, { ...client, redirectUri }, { email: "soak@example.com", password: benchPassword });
  // The same dashboard session, for its live console.
  const cookie = flow.cookie;

  // The dashboard's live console, open for the whole run: its watch slot and subscriptions must
  // not pile up, and it reads every line the agent sends.
  let consoleLines = 0;
  void (async () => {
    const res = await fetch(`${bench.baseUrl}/app/o/soak/servers/${server.id}/console/events`, { headers: { cookie }, signal: watcher.signal });
    if (res.status !== 200) throw new Error(`console events: ${res.status}`);
    for await (const text of res.body!.pipeThrough(new TextDecoderStream())) consoleLines += text.split("\n").filter((l) => l.startsWith("data:")).length;
  })().catch((error: Error) => {
    if (!watcher.signal.aborted) console.error(`the live console ended: ${error.message}`);
  });

  async function oauthRound(): Promise<void> {
    const token = await flow.exchange(await flow.code());
    const tokens = (await token.json()) as Json;
    if (token.status !== 200) throw new Error(`token: ${token.status} ${JSON.stringify(tokens)}`);
    const info = await fetch(`${bench.baseUrl}/api/auth/oauth2/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    if (info.status !== 200) throw new Error(`userinfo: ${info.status}`);
    await info.arrayBuffer();
  }

  async function round(n: number): Promise<void> {
    await api("GET", `servers/listServers?organizationSlug=soak`);
    const ran = await api("POST", "servers/executeConsoleCommand", { serverId: server.id, command: `list ${n}` });
    if (!ran.success) throw new Error(`console: ${JSON.stringify(ran)}`);
    await oauthRound();
  }

  const pid = bench.serve.child.pid!;
  const samples: Sample[] = [];
  /** The first failures' messages, and how many there were in all. */
  const failures: string[] = [];
  let failed = 0;
  let rounds = 0;
  let inFlight = 0;
  const started = Date.now();
  console.log(`soak: ${seconds} s at ${roundsPerSecond} rounds/s (each: a read, a console command, code → token → userinfo), the live console open\n`);
  console.log("elapsed s   rounds   RSS MB   heap MB   external MB   open fds   in flight");
  const snapshots: string[] = [];
  const sample = async () => {
    const m = { ...measure(pid), ...(await heapUsedMb()) };
    samples.push({ at: (Date.now() - started) / 1000, ...m, rounds });
    console.log(
      `${String(Math.round((Date.now() - started) / 1000)).padStart(9)}   ${String(rounds).padStart(6)}   ${m.rssMb.toFixed(1).padStart(6)}   ${m.heapMb.toFixed(1).padStart(7)}   ${m.externalMb.toFixed(1).padStart(11)}   ${String(m.fds).padStart(8)}   ${String(inFlight).padStart(9)}`,
    );
  };
  await sample();
  const sampler = setInterval(() => sample().catch((error: Error) => failures.push(`a sample: ${error.message}`)), sampleSeconds * 1000);
  const firstSnapshot = snapshotDir
    ? setTimeout(() => {
        heapSnapshot(pid).then(
          (file) => snapshots.push(file),
          (error: Error) => failures.push(`the first heap snapshot: ${error.message}`),
        );
      }, warmedUpSeconds * 1000)
    : undefined;
  await new Promise<void>((resolve) => {
    let n = 0;
    const tick = setInterval(() => {
      if (Date.now() - started >= seconds * 1000) {
        clearInterval(tick);
        return resolve();
      }
      const i = n++;
      inFlight++;
      round(i)
        .then(() => rounds++)
        .catch((error: Error) => {
          failed++;
          if (failures.length < 20) failures.push(`at ${Math.round((Date.now() - started) / 1000)} s: ${error.message}`);
        })
        .finally(() => inFlight--);
    }, 1000 / roundsPerSecond);
  });
  while (inFlight > 0) await new Promise((r) => setTimeout(r, 100));
  clearInterval(sampler);
  clearTimeout(firstSnapshot);
  clearInterval(ticker);
  await sample();
  if (snapshotDir && snapshots.length === 1) snapshots.push(await heapSnapshot(pid));

  const window = Math.round(Math.min(300, seconds / 3));
  const first = samples.filter((s) => s.at <= window);
  const last = samples.filter((s) => s.at >= samples.at(-1)!.at - window);
  console.log(
    `\n${rounds} rounds in ${Math.round((Date.now() - started) / 1000)} s; ${failed} rounds failed${failures.length ? `; the first: ${failures.slice(0, 5).join(" | ")}` : ""}`,
  );
  console.log(
    `RSS: ${average(first.map((s) => s.rssMb)).toFixed(1)} MB over the first ${window} s, ${average(last.map((s) => s.rssMb)).toFixed(1)} MB over the last ${window} s`,
  );
  console.log(`V8 heap in use (garbage included): ${average(first.map((s) => s.heapMb)).toFixed(1)} MB first, ${average(last.map((s) => s.heapMb)).toFixed(1)} MB last`);
  console.log(
    `memory outside the heap (buffers): ${average(first.map((s) => s.externalMb)).toFixed(1)} MB first, ${average(last.map((s) => s.externalMb)).toFixed(1)} MB last`,
  );
  console.log(`open fds: ${average(first.map((s) => s.fds)).toFixed(1)} first, ${average(last.map((s) => s.fds)).toFixed(1)} last`);
  if (snapshots.length === 2) {
    console.log(`\nheap snapshots at ${warmedUpSeconds} s and at the end (${snapshots.join(", ")}):`);
    printDiff(summarize(snapshots[0]!), summarize(snapshots[1]!));
  }
  console.log(`the live console received ${consoleLines} events`);
  console.log(`load averages (1, 5, 15 min) at the end: ${loadAverages()}`);
  if (failures.length) process.exitCode = 1;
} finally {
  watcher.abort();
  await agent?.stop();
  await bench.close();
}
