import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { configTables, tableIn, withTable } from "../../../server/config-docs.ts";
import { variables } from "../../../server/config-variables.ts";
import { loadConfig } from "../../../server/config.ts";

const root = new URL("../../../", import.meta.url);

describe("configuration docs", () => {
  for (const table of configTables) {
    it(`${table.file}'s configuration table is the one server/config-variables.ts makes (npm run docs:config)`, () => {
      const document = readFileSync(new URL(table.file, root), "utf8");
      assert.equal(tableIn(document, table), table.render(), `${table.file}'s table differs from server/config-variables.ts: run npm run docs:config`);
    });
  }

  it("notices a table edited by hand, and writing puts the variables' table back", () => {
    const table = configTables[0];
    const document = readFileSync(new URL(table.file, root), "utf8");
    const edited = document.replace("| `PORT` | `3000` |", "| `PORT` | `8080` |");
    assert.notEqual(tableIn(edited, table), table.render());
    assert.equal(withTable(edited, table), document);
  });

  it("lists every variable loadConfig reads, in every table", () => {
    const read = new Set<string>();
    const env = new Proxy({} as Record<string, string | undefined>, {
      get: (_, name) => (typeof name === "string" && read.add(name), undefined),
    });
    loadConfig(env);
    // Each optional part, switched on, so that what it reads only then is read too.
    const on = {
      SMTP_URL: "smtp://mail.example.com",
      METRICS_PORT: "9100",
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318",
      OCELOT_MODEL_URL: "http://127.0.0.1:11434/v1",
      OCELOT_MODEL: "m",
    };
    loadConfig(new Proxy(on as Record<string, string | undefined>, { get: (target, name) => (typeof name === "string" && read.add(name), Reflect.get(target, name)) }));
    const documented = new Set(Object.entries(variables).flatMap(([name, v]) => [name, ...("oldName" in v && v.oldName ? [v.oldName] : [])]));
    assert.deepEqual(
      [...read].filter((name) => !documented.has(name)),
      [],
    );
    for (const table of configTables) for (const name of Object.keys(variables)) assert.ok(table.render().includes(`| \`${name}\``), `${name} in ${table.file}`);
  });
});
