/**
 * Shared by the benchmarks: a real `outpost serve` process on a fresh PostgreSQL database (the
 * load generator runs in this process, so it does not share the server's event loop).
 */
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { loadavg } from "node:os";
import pg from "pg";
import autocannon from "autocannon";
import { httpLoad, type LoadResult } from "./http-load.ts";
import { runCli, startServe, type ServeProcess } from "../test/support/process.ts";

export interface BenchServer {
  serve: ServeProcess;
  baseUrl: string;
  env: Record<string, string>;
  close(): Promise<void>;
}

/** A new database on DATABASE_URL's server (default: the local one): its URL, and how to drop it. */
export async function createBenchDatabase(prefix = "outpost_bench"): Promise<{ url: string; drop(): Promise<void> }> {
  const serverUrl = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
  const name = `${prefix}_${randomBytes(4).toString("hex")}`;
  const admin = async (sql: string) => {
    const client = new pg.Client({ connectionString: serverUrl });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await admin(`create database "${name}"`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => admin(`drop database if exists "${name}" with (force)`) };
}

/** Starts Outpost on a new database of DATABASE_URL's server (default: the local one). */
export async function startBenchServer(extraEnv: Record<string, string> = {}): Promise<BenchServer> {
  const database = await createBenchDatabase();
  const env = { DATABASE_URL: database.url, LOG_LEVEL: "warn", RATE_LIMIT_PER_MINUTE: "1000000", ...extraEnv };
  const serve = await startServe({ ...env, LOG_LEVEL: "info" });
  return {
    serve,
    baseUrl: `http://127.0.0.1:${serve.port}`,
    env,
    async close() {
      await serve.stop();
      await database.drop();
    },
  };
}

/** The password of the users seedApiKey makes. */
export const benchPassword = "bench password 1";

/** A user (a platform admin if asked) and an API key made with the operator CLI; returns the key. */
export async function seedApiKey(bench: BenchServer, email: string, platformAdmin = false): Promise<string> {
  const user = await runCli(["user", "create", "--email", email, "--password", benchPassword, ...(platformAdmin ? ["--platform-admin"] : [])], bench.env);
  if (user.code !== 0) throw new Error(user.stderr);
  const key = await runCli(["api-key", "create", "--email", email, "--name", "bench"], bench.env);
  if (key.code !== 0) throw new Error(key.stderr);
  return key.stdout.trim().split("\n").pop()!;
}

export interface Figures {
  name: string;
  requestsPerSecond: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
  /** 2xx responses. */
  requests?: number;
  /** The load generator's own CPU per request, µs. */
  generatorCpuMicros?: number;
}

/** Which load generator the benchmarks use: the lean one (bench/http-load.ts) unless BENCH_LOAD=autocannon. */
export const loadGenerator: "lean" | "autocannon" = process.env.BENCH_LOAD === "autocannon" ? "autocannon" : "lean";

/** The figures of one {@link httpLoad} run. */
export function figuresOf(name: string, result: LoadResult): Figures {
  return {
    name,
    requestsPerSecond: result.ok / result.seconds,
    p50: result.p50,
    p99: result.p99,
    errors: result.errors,
    non2xx: result.non2xx,
    requests: result.ok,
    generatorCpuMicros: result.generatorCpuMicros,
  };
}

/** Runs the load generator against one request shape for `duration` seconds and returns its figures. */
export async function load(
  name: string,
  options: { url: string; method?: "GET" | "POST"; headers?: Record<string, string>; body?: string; connections?: number; duration?: number },
): Promise<Figures> {
  const connections = options.connections ?? 50;
  const duration = options.duration ?? 10;
  if (loadGenerator === "lean") {
    const target = new URL(options.url);
    const request = { method: options.method ?? "GET", path: target.pathname + target.search, headers: options.headers, body: options.body };
    return figuresOf(name, await httpLoad({ url: target.origin, connections, seconds: duration, request: () => request }));
  }
  const cpuBefore = process.cpuUsage();
  const result = await autocannon({ url: options.url, method: options.method ?? "GET", headers: options.headers, body: options.body, connections, duration });
  const cpu = process.cpuUsage(cpuBefore);
  return {
    name,
    requestsPerSecond: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
    requests: result["2xx"],
    generatorCpuMicros: (cpu.user + cpu.system) / Math.max(1, result.requests.total),
  };
}

export function printFigures(rows: Figures[]): void {
  const pad = (s: string, n: number) => s.padEnd(n);
  console.log(pad("case", 46) + pad("req/s", 10) + pad("p50 ms", 9) + pad("p99 ms", 9) + "errors/non-2xx");
  for (const r of rows) {
    console.log(pad(r.name, 46) + pad(r.requestsPerSecond.toFixed(0), 10) + pad(String(r.p50), 9) + pad(String(r.p99), 9) + `${r.errors}/${r.non2xx}`);
  }
}

/**
 * CPU time (user + system, ms) a process has used so far, from /proc (Linux); undefined elsewhere.
 * CPU per request is steadier than requests/s on a machine shared with other work.
 */
export function processCpuMs(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return undefined;
  }
}

/** µs of a process's CPU per request between two {@link processCpuMs} readings, as text. */
export function cpuPerRequest(before: number | undefined, after: number | undefined, requests: number): string {
  return before === undefined || after === undefined || !requests ? "n/a" : `${Math.round(((after - before) * 1000) / requests)} µs`;
}

/** The machine's load averages, to print beside every figure. */
export function loadAverages(): string {
  return loadavg()
    .map((l) => l.toFixed(2))
    .join(", ");
}
