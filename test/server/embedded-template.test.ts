/**
 * The shipped embedded-database template: made by the installed PGlite, through exactly the
 * migrations in core/db/migrations, and a first start from it ends with the schema the migrations
 * make on a cluster PGlite's initdb created.
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { createOrm, migrate } from "../../core/db/orm.ts";
import { migrations } from "../../core/db/migrations/index.ts";
import { startEmbeddedPostgres, type EmbeddedPostgres } from "../../server/embedded-postgres.ts";
import { prepareFromTemplate, templateInfoFile, type TemplateInfo } from "../../server/embedded-template.ts";

const regenerate = "run npm run generate:embedded-template and commit server/embedded-template/";

/** Every table's columns, every index and every constraint of the public schema, as text. */
async function schemaOf(url: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const columns = await client.query(
      `select table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' ' || coalesce(column_default, '') as line
         from information_schema.columns where table_schema = 'public' order by table_name, ordinal_position`,
    );
    const indexes = await client.query(`select indexdef as line from pg_indexes where schemaname = 'public' order by indexname`);
    const constraints = await client.query(
      `select conrelid::regclass || ' ' || conname || ' ' || pg_get_constraintdef(oid) as line
         from pg_constraint where connamespace = 'public'::regnamespace order by conrelid::regclass::text, conname`,
    );
    return [...columns.rows, ...indexes.rows, ...constraints.rows].map((row) => row.line as string);
  } finally {
    await client.end();
  }
}

/** Migrates the database at `url` and returns what that applied. */
async function migrated(url: string): Promise<string[]> {
  const orm = await createOrm({ url, poolSize: 1 });
  try {
    return await migrate(orm);
  } finally {
    await orm.close();
  }
}

describe("embedded database template", function () {
  const info = JSON.parse(readFileSync(templateInfoFile, "utf8")) as TemplateInfo;
  let dir: string;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "outpost-template-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("was made by the installed PGlite", () => {
    const installed = JSON.parse(readFileSync(new URL("../../node_modules/@electric-sql/pglite/package.json", import.meta.url), "utf8")).version;
    assert.equal(info.pglite, installed, `the template was made by PGlite ${info.pglite}, but ${installed} is installed; ${regenerate}`);
  });

  it("has been through exactly the migrations in core/db/migrations", () => {
    assert.deepEqual(
      info.migrations,
      migrations.map((m) => m.name),
      `the template does not match the migrations; ${regenerate}`,
    );
  });

  it("gives a first start the schema the migrations make, with no migration left to run", async () => {
    let fromTemplate: EmbeddedPostgres | undefined;
    let fresh: EmbeddedPostgres | undefined;
    try {
      fromTemplate = await startEmbeddedPostgres({ dataDir: join(dir, "pglite"), port: 0 });
      assert.equal(fromTemplate.origin, "template");
      assert.deepEqual(await migrated(fromTemplate.url), []);
      fresh = await startEmbeddedPostgres({ dataDir: undefined, port: 0 });
      assert.equal(fresh.origin, "initdb");
      assert.deepEqual(
        await migrated(fresh.url),
        migrations.map((m) => m.name),
      );
      const [expected, actual] = [await schemaOf(fresh.url), await schemaOf(fromTemplate.url)];
      assert.ok(expected.length > 50, "the reference schema has the service's tables");
      assert.deepEqual(actual, expected, `the template's schema differs from the migrations'; ${regenerate}`);
    } finally {
      await fromTemplate?.stop();
      await fresh?.stop();
    }
  });

  it("opens what the first start made as it is on later starts", async () => {
    const dataDir = join(dir, "pglite");
    const first = await startEmbeddedPostgres({ dataDir, port: 0 });
    await migrated(first.url);
    await first.stop();
    const later = await startEmbeddedPostgres({ dataDir, port: 0 });
    try {
      assert.equal(later.origin, "existing");
      assert.deepEqual(await migrated(later.url), []);
    } finally {
      await later.stop();
    }
  });

  it("leaves a directory that already holds files to PGlite", () => {
    const dataDir = join(dir, "pglite");
    mkdirSync(dataDir);
    writeFileSync(join(dataDir, "notes.txt"), "not a cluster");
    assert.equal(prepareFromTemplate(dataDir), false);
    assert.deepEqual(readdirSync(dataDir), ["notes.txt"]);
  });

  it("unpacks an empty directory, and nothing beside it", () => {
    const dataDir = join(dir, "pglite");
    mkdirSync(dataDir);
    assert.equal(prepareFromTemplate(dataDir), true);
    assert.ok(readdirSync(dataDir).includes("PG_VERSION"));
    assert.ok(!readdirSync(dataDir).includes("postmaster.pid"), "a live cluster's lock file is not copied");
    assert.deepEqual(readdirSync(dir), ["pglite"]);
  });
});
