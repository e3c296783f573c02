import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ESLint } from "eslint";
import tseslint from "typescript-eslint";
import outpost from "../../../scripts/lint/type-import-cycles.ts";

/** The lint rule for cycles that type-only imports close (import-x/no-cycle skips those), on a small project of its own. */
describe("lint: import cycles through type-only imports", function () {
  this.timeout(30_000);
  let dir: string;

  before(() => {
    dir = mkdtempSync(join(tmpdir(), "outpost-lint-"));
    mkdirSync(join(dir, "core"));
    const files: Record<string, string> = {
      // deps.ts needs a type of signing.ts, which takes the clock's type from deps.ts: a ring.
      "core/deps.ts": 'import type { Keys } from "./signing.ts";\nexport interface Clock { now(): Date }\nexport interface Deps { keys: Keys }\n',
      "core/signing.ts": 'import type { Clock } from "./deps.ts";\nexport interface Keys { clock: Clock }\n',
      // A value import of a module in the ring, which imports nothing back: no cycle.
      "core/user.ts": 'import { type Deps } from "./deps.ts";\nexport const use = (deps: Deps) => deps.keys;\n',
      // The same shape with the shared type below both: no cycle.
      "core/clock.ts": "export interface Clock2 { now(): Date }\n",
      "core/a.ts": 'import type { Clock2 } from "./clock.ts";\nimport type { B } from "./b.ts";\nexport interface A { b: B; clock: Clock2 }\n',
      "core/b.ts": 'import type { Clock2 } from "./clock.ts";\nexport interface B { clock: Clock2 }\n',
    };
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  async function lint(): Promise<Map<string, string[]>> {
    const eslint = new ESLint({
      cwd: dir,
      overrideConfigFile: true,
      overrideConfig: [{ files: ["**/*.ts"], languageOptions: { parser: tseslint.parser }, plugins: { outpost }, rules: { "outpost/type-import-cycles": "error" } }],
    });
    const results = await eslint.lintFiles(["core"]);
    return new Map(results.map((r) => [r.filePath.slice(dir.length + 1), r.messages.map((m) => m.message)]));
  }

  it("reports each type-only import that closes a ring, naming the ring", async () => {
    const found = await lint();
    assert.deepEqual(found.get("core/deps.ts"), [
      "Type-only import cycle: core/deps.ts → core/signing.ts → core/deps.ts. Move the shared type to a module both can import, or beside what owns it.",
    ]);
    assert.equal(found.get("core/signing.ts")?.length, 1);
    assert.match(found.get("core/signing.ts")![0], /core\/signing\.ts → core\/deps\.ts → core\/signing\.ts/);
  });

  it("says nothing of imports that close no ring", async () => {
    const found = await lint();
    for (const file of ["core/user.ts", "core/clock.ts", "core/a.ts", "core/b.ts"]) assert.deepEqual(found.get(file), [], file);
  });
});
