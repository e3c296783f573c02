/**
 * Measures bench/reference-server.ts (the minimal Koa + pg + one RS256 signature endpoint)
 * the way bench:oauth measures Outpost's token endpoint: the same load generator, connections and
 * batch sizes, on its own fresh database. Printed beside Outpost's figure, it turns an absolute
 * target set on one machine into a comparison that holds on whichever machine runs the benchmark.
 */
import { fork } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import pg from "pg";
import { httpLoad } from "./http-load.ts";
import { createBenchDatabase, figuresOf, processCpuMs, type Figures } from "./support.ts";

export interface ReferenceRun {
  batches: Figures[];
  exchangesPerSecond: number;
  /** The reference process's CPU per exchange, µs (undefined off Linux). */
  cpuMicros?: number;
}

export async function runReference(options: { batches: number; perBatch: number; connections: number }): Promise<ReferenceRun> {
  const database = await createBenchDatabase("outpost_bench_reference");
  const db = new pg.Client({ connectionString: database.url });
  const child = fork(new URL("./reference-server.ts", import.meta.url), [database.url], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
  try {
    await db.connect();
    await db.query(`create table codes (id uuid primary key default gen_random_uuid(), code_hash text unique not null,
      subject text not null, client_id text not null, consumed_at timestamptz)`);
    await db.query(`create table tokens (id uuid primary key default gen_random_uuid(), token_hash text unique not null,
      code_id uuid not null references codes (id) on delete cascade, expires_at timestamptz not null)`);
    // A warm-up batch, then the measured ones; every request carries a code never used before.
    const codes = Array.from({ length: (options.batches + 1) * options.perBatch }, () => randomBytes(32).toString("base64url"));
    await db.query("insert into codes (code_hash, subject, client_id) select unnest($1::text[]), 'player', 'app'", [
      codes.map((code) => createHash("sha256").update(code).digest("hex")),
    ]);
    const { port } = await new Promise<{ port: number }>((resolve, reject) => {
      child.once("message", (message) => resolve(message as { port: number }));
      child.once("exit", (code) => reject(new Error(`the reference server exited (${code})`)));
    });
    let next = 0;
    const batch = async (label: string) => {
      const first = next;
      next += options.perBatch;
      return httpLoad({
        url: `http://127.0.0.1:${port}`,
        connections: options.connections,
        amount: options.perBatch,
        request: (i) => ({
          method: "POST",
          path: "/token",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: `grant_type=authorization_code&code=${codes[first + i]}`,
        }),
      }).then((result) => ({ result, figures: figuresOf(label, result) }));
    };
    await batch("warm-up");
    const cpuBefore = processCpuMs(child.pid);
    const runs = [];
    for (let b = 1; b <= options.batches; b++) runs.push(await batch(`reference token batch ${b} (${options.perBatch})`));
    const cpuAfter = processCpuMs(child.pid);
    const ok = runs.reduce((t, r) => t + r.result.ok, 0);
    const seconds = runs.reduce((t, r) => t + r.result.seconds, 0);
    return {
      batches: runs.map((r) => r.figures),
      exchangesPerSecond: ok / seconds,
      cpuMicros: cpuBefore === undefined || cpuAfter === undefined ? undefined : ((cpuAfter - cpuBefore) * 1000) / ok,
    };
  } finally {
    child.disconnect();
    await new Promise((resolve) => (child.exitCode === null ? child.once("exit", resolve) : resolve(null)));
    await db.end().catch(() => {});
    await database.drop();
  }
}
