/**
 * How long `outpost serve` takes to become ready on the embedded database: once on an empty
 * DATA_DIR (the database is created), then again on the same directory. The clock runs from the
 * spawn to the first 200 from /readyz, so it includes Node's own start, as an operator sees it.
 * Targets (issue 14): first start ≤ 3 s, later starts ≤ 2 s.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { loadAverages, processCpuMs } from "./support.ts";
import { freePort } from "../test/support/outpost.ts";
import { serveNodeOptions } from "../server/node-options.ts";

const bin = fileURLToPath(new URL("../bin/outpost.js", import.meta.url));
const pollMs = 20;
const giveUpMs = 60_000;

async function ready(port: number): Promise<boolean> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/readyz`);
    await res.body?.cancel();
    return res.status === 200;
  } catch {
    return false;
  }
}

interface Start {
  ms: number;
  /** The process's CPU time until ready: steadier than the wall clock on a shared machine. */
  cpuMs: number;
}

/** Starts the service on `dataDir`, measures until /readyz answers 200, and stops it. */
async function timeStart(dataDir: string): Promise<Start> {
  const [port, gamePort] = [await freePort(), await freePort()];
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, PORT: String(port), GAME_PORT: String(gamePort), HOST: "127.0.0.1", LOG_LEVEL: "warn" };
  delete env.DATABASE_URL;
  delete env.KEY_ENCRYPTION_KEY;
  const started = performance.now();
  const child = spawn(process.execPath, [...serveNodeOptions, bin, "serve"], { env, stdio: ["ignore", "ignore", "inherit"] });
  const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
  let exitCode: number | null | undefined;
  void exited.then((code) => (exitCode = code));
  try {
    while (!(await ready(port))) {
      if (exitCode !== undefined) throw new Error(`outpost serve exited with ${exitCode} before it was ready`);
      if (performance.now() - started > giveUpMs) throw new Error(`outpost serve was not ready within ${giveUpMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, pollMs));
    }
    return { ms: performance.now() - started, cpuMs: processCpuMs(child.pid) ?? NaN };
  } finally {
    child.kill("SIGTERM");
    await exited;
  }
}

/** Rounds (BENCH_ROUNDS, default 3): the machine's other work moves single figures by a second. */
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const firsts: Start[] = [];
const laters: Start[] = [];
for (let round = 0; round < rounds; round++) {
  const dataDir = mkdtempSync(join(tmpdir(), "outpost-bench-start-"));
  try {
    firsts.push(await timeStart(dataDir));
    laters.push(await timeStart(dataDir));
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
function row(name: string, starts: Start[], targetMs: number): void {
  const ms = median(starts.map((s) => s.ms));
  console.log(
    `${name.padEnd(30)} median ${seconds(ms).padStart(7)} (${starts.map((s) => seconds(s.ms)).join(", ")}), ` +
      `CPU ${seconds(median(starts.map((s) => s.cpuMs)))}; target ≤ ${targetMs / 1000} s: ${ms <= targetMs ? "met" : "MISSED"}`,
  );
}
console.log(`${rounds} rounds; load averages ${loadAverages()} on ${availableParallelism()} cores`);
row("first start (empty DATA_DIR)", firsts, 3000);
row("later start (same DATA_DIR)", laters, 2000);
