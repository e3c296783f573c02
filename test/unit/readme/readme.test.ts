import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const read = (path: string) => readFileSync(`${root}${path}`, "utf8");
const readme = read("README.md");

/** The README's shell examples: the lines of its fenced code blocks. */
const exampleLines = [...readme.matchAll(/^```[a-z]*\n([\s\S]*?)^```$/gm)].flatMap((block) => block[1].split("\n"));

/** The README's section with this heading, up to the next one. */
function section(heading: string): string {
  const start = readme.indexOf(`\n## ${heading}\n`);
  assert.ok(start >= 0, `no section "${heading}"`);
  const end = readme.indexOf("\n## ", start + 1);
  return readme.slice(start, end < 0 ? undefined : end);
}

/**
 * What the README tells a newcomer, held against the code and files it describes, so that a walk
 * through it from a fresh clone meets what it says.
 */
describe("the README", () => {
  it("documents every DEMO_* variable the demo reads", () => {
    const variables = new Set([...read("scripts/demo.ts").matchAll(/process\.env\.(DEMO_[A-Z_]+)/g)].map((m) => m[1]));
    assert.ok(variables.has("DEMO_PORT"));
    const missing = [...variables].filter((name) => !section("Try it: the demo").includes(`\`${name}\``));
    assert.deepEqual(missing, []);
  });

  it("creates users without a password on the command line, and says how the password is given", () => {
    const creating = exampleLines.filter((line) => /user create/.test(line));
    assert.ok(creating.length > 0);
    assert.deepEqual(
      creating.filter((line) => line.includes("--password")),
      [],
      "npm's banner and ps would show it",
    );
    assert.match(section("First five minutes"), /asks for the password twice without echoing it/);
    assert.match(section("First five minutes"), /pipe it in instead: `printf '%s\\n' "\$PASSWORD" \| npm run outpost -- user create/);
  });

  it("explains npm's EBADENGINE warnings while locked packages ask for a newer Node than an older machine has", () => {
    // Node 20: older than Outpost needs, where npm installs the Node 24 beside the project and
    // warns about every package whose engines exclude the Node running npm.
    const olderNode = 20;
    const lock = JSON.parse(read("package-lock.json")) as { packages: Record<string, { engines?: { node?: string }; optional?: boolean }> };
    const warned = Object.entries(lock.packages).filter(([, entry]) => {
      const minimum = /^>=\s*(\d+)/.exec(entry.engines?.node ?? "");
      return !entry.optional && minimum !== null && Number(minimum[1]) > olderNode;
    });
    if (warned.length === 0) return;
    assert.match(readme.slice(0, readme.indexOf("\n## ")), /`npm install` prints `npm warn EBADENGINE`[^]*harmless/);
  });

  it("says what is proven and how, citing test files that exist, and what has never run here", () => {
    const proven = section("What is proven, and how");
    const cited = [...proven.matchAll(/`(test\/[^`]+)`/g)].map((m) => m[1]);
    assert.ok(cited.length >= 10, cited.join(" "));
    const absent = cited.filter((path) => !existsSync(`${root}${path}`));
    assert.deepEqual(absent, []);
    assert.match(proven, /stand-in process that prints the console lines/);
    assert.match(proven, /a real Paper, Spigot, vanilla or Fabric jar: none has been run under `wrap` here/);
    assert.match(proven, /\| Hytale \| in the contract only/);
    assert.match(proven, /never built or run here/);
    assert.doesNotMatch(readme, /runs game servers \(Minecraft and Hytale\)/);
  });
});
