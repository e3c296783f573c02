/**
 * A database of its own for each test suite: on the PostgreSQL server named by DATABASE_URL (a
 * fresh database, dropped afterwards), or, without DATABASE_URL, on an in-memory embedded PGlite.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";
import { startEmbeddedPostgres } from "../../server/embedded-postgres.ts";

export interface TestDatabase {
  url: string;
  /** "postgres" or "embedded" */
  kind: string;
  drop(): Promise<void>;
}

export async function createTestDatabase(): Promise<TestDatabase> {
  const serverUrl = process.env.DATABASE_URL;
  if (!serverUrl) {
    const embedded = await startEmbeddedPostgres({ dataDir: undefined, port: 0 });
    return { url: embedded.url, kind: "embedded", drop: () => embedded.stop() };
  }
  const name = `outpost_test_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query(`create database "${name}"`);
  } finally {
    await admin.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    kind: "postgres",
    async drop() {
      const client = new pg.Client({ connectionString: serverUrl });
      await client.connect();
      try {
        await client.query(`drop database if exists "${name}" with (force)`);
      } finally {
        await client.end();
      }
    },
  };
}

/**
 * Registers tests of behaviour that exists only on a PostgreSQL server (a store shared by
 * instances, LISTEN/NOTIFY); on the embedded database they are not part of the run.
 */
export function onPostgresServer(register: () => void): void {
  if (process.env.DATABASE_URL) register();
}
