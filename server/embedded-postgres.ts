/**
 * The embedded default database: PGlite (PostgreSQL compiled to WebAssembly) served on a loopback
 * socket, so the ordinary PostgreSQL driver talks to it unchanged. pglite-socket runs one query at
 * a time, and while a connection is in a transaction it serves only that connection, so
 * transactions are serialized (correct, not concurrent). It does not deliver LISTEN/NOTIFY.
 */
import { mkdirSync, rmSync } from "node:fs";
import { PGlite } from "@electric-sql/pglite";
import { PGLiteSocketServer } from "@electric-sql/pglite-socket";
import { prepareFromTemplate } from "./embedded-template.ts";

export interface EmbeddedPostgres {
  /** postgres:// URL of the loopback socket. */
  url: string;
  /**
   * Where the cluster came from: the directory as it was, the shipped template (a first start), or
   * PGlite's initdb (in memory, or a template this PGlite cannot open).
   */
  origin: "existing" | "template" | "initdb";
  stop(): Promise<void>;
}

export interface EmbeddedPostgresOptions {
  /** Where the data lives; undefined keeps it in memory (tests). */
  dataDir: string | undefined;
  /** Loopback port; 0 picks a free one. */
  port: number;
}

/** Opens the cluster in `dataDir`, unpacking the template into it first when it is empty. */
async function openCluster(dataDir: string | undefined): Promise<{ db: PGlite; origin: EmbeddedPostgres["origin"] }> {
  if (!dataDir) return { db: await PGlite.create(), origin: "initdb" };
  if (!prepareFromTemplate(dataDir)) {
    mkdirSync(dataDir, { recursive: true });
    return { db: await PGlite.create({ dataDir }), origin: "existing" };
  }
  try {
    return { db: await PGlite.create({ dataDir }), origin: "template" };
  } catch {
    // A template from another PostgreSQL build does not open; it held nothing, so start over slowly.
    rmSync(dataDir, { recursive: true, force: true });
    mkdirSync(dataDir, { recursive: true });
    return { db: await PGlite.create({ dataDir }), origin: "initdb" };
  }
}

export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const { db, origin } = await openCluster(options.dataDir);
  const server = new PGLiteSocketServer({ db, host: "127.0.0.1", port: options.port, maxConnections: 4 });
  await server.start();
  return {
    url: `postgres://postgres@${server.getServerConn()}/postgres`,
    origin,
    async stop() {
      await server.stop();
      await db.close();
    },
  };
}
