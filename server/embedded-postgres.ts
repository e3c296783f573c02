/**
 * The embedded default database: PGlite (PostgreSQL compiled to WebAssembly) served on a loopback
 * socket, so the ordinary PostgreSQL driver talks to it unchanged. pglite-socket runs one query at
 * a time, and while a connection is in a transaction it serves only that connection, so
 * transactions are serialized (correct, not concurrent). It does not deliver LISTEN/NOTIFY.
 */
import { mkdirSync } from "node:fs";
import { PGlite } from "@electric-sql/pglite";
import { PGLiteSocketServer } from "@electric-sql/pglite-socket";

export interface EmbeddedPostgres {
  /** postgres:// URL of the loopback socket. */
  url: string;
  stop(): Promise<void>;
}

export interface EmbeddedPostgresOptions {
  /** Where the data lives; undefined keeps it in memory (tests). */
  dataDir: string | undefined;
  /** Loopback port; 0 picks a free one. */
  port: number;
}

export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  if (options.dataDir) mkdirSync(options.dataDir, { recursive: true });
  const db = await PGlite.create(options.dataDir ? { dataDir: options.dataDir } : {});
  const server = new PGLiteSocketServer({ db, host: "127.0.0.1", port: options.port, maxConnections: 4 });
  await server.start();
  return {
    url: `postgres://postgres@${server.getServerConn()}/postgres`,
    async stop() {
      await server.stop();
      await db.close();
    },
  };
}
