/**
 * Rebuilds the embedded database's template (server/embedded-template/) with the installed PGlite
 * and every migration. Run it after adding a migration or upgrading @electric-sql/pglite;
 * test/server/embedded-template.test.ts fails until then.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { brotliCompressSync, constants } from "node:zlib";
import { PGlite } from "@electric-sql/pglite";
import { PGLiteSocketServer } from "@electric-sql/pglite-socket";
import { createOrm, migrate } from "../core/db/orm.ts";
import { templateFile, templateInfoFile, type TemplateInfo } from "../server/embedded-template.ts";

const pglite = JSON.parse(readFileSync(new URL("../node_modules/@electric-sql/pglite/package.json", import.meta.url), "utf8")).version as string;
const db = await PGlite.create();
const server = new PGLiteSocketServer({ db, host: "127.0.0.1", port: 0, maxConnections: 4 });
await server.start();
const orm = await createOrm({ url: `postgres://postgres@${server.getServerConn()}/postgres`, poolSize: 1 });
const migrations = await migrate(orm);
await orm.close();
await server.stop();
// Checkpointed, the files need no recovery when a first start opens them.
await db.exec("checkpoint");
const postgres = (await db.query<{ v: string }>("select current_setting('server_version') as v")).rows[0].v;
const tar = Buffer.from(await (await db.dumpDataDir("none")).arrayBuffer());
await db.close();
// Quality 11 with a 16 MiB window: 40 MB of mostly empty pages become about 1.4 MB.
const archive = brotliCompressSync(tar, {
  params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_LGWIN]: 24, [constants.BROTLI_PARAM_SIZE_HINT]: tar.length },
});
mkdirSync(dirname(templateFile), { recursive: true });
writeFileSync(templateFile, archive);
writeFileSync(templateInfoFile, `${JSON.stringify({ pglite, postgres, migrations } satisfies TemplateInfo, null, 2)}\n`);
console.log(`wrote ${templateFile} (${archive.length} bytes; PGlite ${pglite}, PostgreSQL ${postgres}, ${migrations.length} migrations)`);
