/**
 * npm run bench:files — the files panel's transfers on loopback: a 256 MiB file downloaded
 * (GET /api/http/servers/downloadFile) and uploaded (PUT /api/http/servers/uploadFile) through a
 * real `outpost serve` on a fresh PostgreSQL database and the real `outpost-agent wrap` process
 * around a stand-in server, a piece (1 MiB) at a time; then `servers/listFiles` of a folder of
 * 10,000 entries. Prints each way's MB/s (target ≥ 50), the peak RSS growth of Outpost and of the
 * agent over the run (their kernel high-water marks; target ≤ 64 MiB each), and the listing's
 * p50/p99. The bytes are checked (sha256) both ways. A missed target is printed as such and the
 * run still exits 0 (the figures depend on the machine); an error exits 1.
 *
 * Env: BENCH_FILE_MB (default 256), BENCH_LIST_ENTRIES (default 10000), BENCH_LIST_CALLS (default 100).
 */
import { spawn } from "node:child_process";
import { createHash, randomFillSync } from "node:crypto";
import { closeSync, createReadStream, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import { loadAverages, seedApiKey, startBenchServer } from "./support.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const fileMb = Number(process.env.BENCH_FILE_MB ?? 256);
const listEntries = Number(process.env.BENCH_LIST_ENTRIES ?? 10_000);
const listCalls = Number(process.env.BENCH_LIST_CALLS ?? 100);
const targetMbPerSecond = 50;
const targetGrowthMib = 64;
const mib = 1024 * 1024;

/** A process's resident set now and its high-water mark, in bytes (Linux: /proc/<pid>/status). */
function memoryOf(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? NaN) * 1024;
  return { rss: kib("VmRSS"), peak: kib("VmHWM") };
}

/** Writes `mb` MiB of random bytes to `path`; answers their sha256. */
function writeRandomFile(path: string, mb: number): string {
  const hash = createHash("sha256");
  const piece = Buffer.alloc(mib);
  const fd = openSync(path, "w");
  try {
    for (let i = 0; i < mb; i++) {
      randomFillSync(piece);
      hash.update(piece);
      writeSync(fd, piece);
    }
  } finally {
    closeSync(fd);
  }
  return hash.digest("hex");
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))];
const loadAtStart = loadAverages();
const root = mkdtempSync(join(tmpdir(), "outpost-bench-files-"));
const bench = await startBenchServer();
let agent: ReturnType<typeof spawn> | undefined;
try {
  const key = await seedApiKey(bench, "bench@example.com");
  const api = async (method: "GET" | "POST", path: string, body?: unknown) => {
    const r = await fetch(`${bench.baseUrl}/api/http/${path}`, {
      method,
      headers: { "x-api-key": key, ...(body ? { "content-type": "application/json" } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    if (!r.ok) throw new Error(`${path}: ${r.status} ${await r.text()}`);
    return (await r.json()) as Json;
  };
  await api("POST", "organizations/createOrganization", { name: "Bench", slug: "bench" });
  const { server, agentKey } = await api("POST", "servers/createServer", { organizationSlug: "bench", name: "Files", game: "minecraft" });

  const original = writeRandomFile(join(root, "world.bin"), fileMb);
  mkdirSync(join(root, "many"));
  for (let i = 0; i < listEntries; i++) writeFileSync(join(root, "many", `file-${String(i).padStart(5, "0")}.txt`), "x");

  const standIn = fileURLToPath(new URL("../test/agent/fixtures/stand-in-server.ts", import.meta.url));
  const bin = fileURLToPath(new URL("../bin/outpost-agent.js", import.meta.url));
  agent = spawn(process.execPath, [bin, "wrap", "--url", bench.baseUrl, "--key", agentKey, "--auth", "online", "--root", root, "--", process.execPath, standIn], {
    stdio: ["pipe", "pipe", "pipe"],
  });
  let agentOutput = "";
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the agent did not connect:\n${agentOutput}`)), 20_000);
    const onData = (chunk: Buffer) => {
      agentOutput += chunk;
      if (!agentOutput.includes("connected to Outpost")) return;
      clearTimeout(timer);
      resolve();
    };
    agent!.stdout!.on("data", onData);
    agent!.stderr!.on("data", onData);
  });
  const outpostPid = bench.serve.child.pid!;
  const agentPid = agent.pid!;
  const before = { outpost: memoryOf(outpostPid), agent: memoryOf(agentPid) };
  const params = (path: string) => new URLSearchParams({ serverId: server.id, path });

  // Download: the bytes hashed as they come, never held whole.
  let started = performance.now();
  const res = await fetch(`${bench.baseUrl}/api/http/servers/downloadFile?${params("world.bin")}`, { headers: { "x-api-key": key } });
  if (!res.ok) throw new Error(`downloadFile: ${res.status} ${await res.text()}`);
  const downloaded = createHash("sha256");
  let received = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    downloaded.update(chunk);
    received += chunk.length;
  }
  const downloadSeconds = (performance.now() - started) / 1000;
  if (received !== fileMb * mib || downloaded.digest("hex") !== original) throw new Error(`the download differs from the file (${received} bytes)`);

  // Upload: the file streamed from disk as the body.
  started = performance.now();
  const put = await fetch(`${bench.baseUrl}/api/http/servers/uploadFile?${params("uploaded.bin")}`, {
    method: "PUT",
    headers: { "x-api-key": key, "content-type": "application/octet-stream", "content-length": String(fileMb * mib) },
    body: Readable.toWeb(createReadStream(join(root, "world.bin"), { highWaterMark: mib })) as ReadableStream,
    duplex: "half",
  } as RequestInit);
  const uploaded = (await put.json()) as Json;
  const uploadSeconds = (performance.now() - started) / 1000;
  if (!put.ok || uploaded.sha256 !== original) throw new Error(`uploadFile: ${put.status} ${JSON.stringify(uploaded)}`);

  const after = { outpost: memoryOf(outpostPid), agent: memoryOf(agentPid) };

  // A listing of the big folder: the first page (1,000 of 10,000 entries, sorted over all of them).
  const latencies: number[] = [];
  await api("GET", `servers/listFiles?${params("many")}`);
  for (let i = 0; i < listCalls; i++) {
    const t0 = performance.now();
    const page = await api("GET", `servers/listFiles?${params("many")}`);
    latencies.push(performance.now() - t0);
    if (page.entries.length !== Math.min(1000, listEntries)) throw new Error(`listFiles gave ${page.entries.length} entries`);
  }
  latencies.sort((a, b) => a - b);

  const mbps = (seconds: number) => (fileMb * mib) / 1e6 / seconds;
  const growth = (name: "outpost" | "agent") => (after[name].peak - before[name].rss) / mib;
  const verdict = (met: boolean) => (met ? "met" : "NOT MET");
  console.log(`\nfiles through Outpost and the agent (wrap), loopback, PostgreSQL, a ${fileMb} MiB file\n`);
  console.log(
    `download: ${mbps(downloadSeconds).toFixed(1)} MB/s (${downloadSeconds.toFixed(2)} s), target ≥ ${targetMbPerSecond}: ${verdict(mbps(downloadSeconds) >= targetMbPerSecond)}`,
  );
  console.log(
    `upload:   ${mbps(uploadSeconds).toFixed(1)} MB/s (${uploadSeconds.toFixed(2)} s), target ≥ ${targetMbPerSecond}: ${verdict(mbps(uploadSeconds) >= targetMbPerSecond)}`,
  );
  for (const name of ["outpost", "agent"] as const) {
    console.log(
      `${name} RSS: ${(before[name].rss / mib).toFixed(0)} MiB before, peak ${(after[name].peak / mib).toFixed(0)} MiB: growth ${growth(name).toFixed(1)} MiB, target ≤ ${targetGrowthMib}: ${verdict(growth(name) <= targetGrowthMib)}`,
    );
  }
  console.log(
    `listFiles of ${listEntries} entries (first page of 1,000), ${listCalls} calls: p50 ${percentile(latencies, 50).toFixed(1)} ms, p99 ${percentile(latencies, 99).toFixed(1)} ms`,
  );
  console.log(`load averages (1, 5, 15 min): ${loadAtStart} at the start, ${loadAverages()} at the end`);
} finally {
  agent?.kill("SIGKILL");
  await bench.close();
  rmSync(root, { recursive: true, force: true });
}
