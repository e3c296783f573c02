/**
 * Writes the configuration tables of README.md and docs/deploy.md from server/config-variables.ts
 * (`npm run docs:config`). Run it after adding or changing a variable: test/config/config-docs.test.ts
 * fails until then.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { configTables, withTable } from "../server/config-docs.ts";

const root = new URL("../", import.meta.url);
for (const table of configTables) {
  const file = new URL(table.file, root);
  const before = readFileSync(file, "utf8");
  const after = withTable(before, table);
  if (after !== before) writeFileSync(file, after);
  console.log(`${table.file}: ${after === before ? "up to date" : "written"}`);
}
