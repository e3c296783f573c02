/**
 * Which PostgreSQL to use: DATABASE_URL's server, or the embedded one under DATA_DIR. Only one
 * process may own an embedded data directory; it records its socket's address there, so the CLI
 * run beside a serving process talks to that process's database instead of opening the files.
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Logger } from "pino";
import { startEmbeddedPostgres } from "./embedded-postgres.ts";
import type { Config } from "./config.ts";

export interface Database {
  url: string;
  kind: "postgres" | "embedded";
  poolSize: number;
  close(): Promise<void>;
}

interface Owner {
  pid: number;
  url: string;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

function currentOwner(file: string): Owner | undefined {
  if (!existsSync(file)) return undefined;
  try {
    const owner = JSON.parse(readFileSync(file, "utf8")) as Owner;
    return owner.pid !== process.pid && alive(owner.pid) ? owner : undefined;
  } catch {
    return undefined;
  }
}

export class DatabaseBusyError extends Error {}

/** Refuses to go on while an `outpost serve` process owns the embedded database in DATA_DIR. */
export function assertNotServing(config: Config, why: string): void {
  if (config.databaseUrl) return;
  const owner = currentOwner(join(config.dataDir, "embedded-postgres.json"));
  if (owner) throw new DatabaseBusyError(`another Outpost process (pid ${owner.pid}) is serving ${config.dataDir}; stop it first: ${why}`);
}

/**
 * Opens the database. `serve` owns the embedded directory; other commands borrow a serving
 * process's database when there is one, else open the directory for the time they run.
 */
export async function openDatabase(config: Config, logger: Logger, mode: "serve" | "borrow"): Promise<Database> {
  if (config.databaseUrl) {
    return { url: config.databaseUrl, kind: "postgres", poolSize: config.databasePoolSize, close: async () => {} };
  }
  const ownerFile = join(config.dataDir, "embedded-postgres.json");
  const owner = currentOwner(ownerFile);
  if (owner) {
    if (mode === "serve") {
      throw new DatabaseBusyError(`another Outpost process (pid ${owner.pid}) is serving ${config.dataDir}; stop it or set DATA_DIR`);
    }
    return { url: owner.url, kind: "embedded", poolSize: 1, close: async () => {} };
  }
  const dataDir = join(config.dataDir, "pglite");
  const started = performance.now();
  const embedded = await startEmbeddedPostgres({ dataDir, port: 0 });
  writeFileSync(ownerFile, JSON.stringify({ pid: process.pid, url: embedded.url } satisfies Owner));
  logger.info(
    { dataDir, origin: embedded.origin, ms: Math.round(performance.now() - started) },
    "embedded PostgreSQL started (set DATABASE_URL to use a PostgreSQL server)",
  );
  return {
    url: embedded.url,
    kind: "embedded",
    poolSize: 1,
    async close() {
      await embedded.stop();
      rmSync(ownerFile, { force: true });
    },
  };
}
