/**
 * The package as a user gets it: `npm pack` in clients/typescript (which builds it), the tarball
 * unpacked into a new project's node_modules beside links to the dependencies it declares (and
 * nothing else: a dependency it forgot fails to resolve), its types checked by a consumer's tsc,
 * and a script importing "@outpost/client" run by the machine's own Node (20 here, older than the
 * repository's 24) against a real Outpost.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { adminApiKey } from "../../../test/support/account-oauth.ts";
import { startTestOutpost, type TestOutpost } from "../../../test/support/outpost.ts";

const run = promisify(execFile);
const packageDir = fileURLToPath(new URL("..", import.meta.url));
const root = join(packageDir, "../..");
/** The machine's Node, not the repository's (node_modules/.bin/node is 24). */
const systemNode = "/usr/bin/node";

const script = `
import { createOutpostClient, OutpostError } from "@outpost/client";
import { Game } from "@outpost/client/gen/outpost/servers/v1/resources_pb.js";
const [baseUrl, apiKey] = process.argv.slice(2);
const client = createOutpostClient({ baseUrl, apiKey });
await client.organizations.createOrganization({ name: "Packed", slug: "packed" });
const { server } = await client.servers.createServer({ organizationSlug: "packed", name: "Hub", game: Game.MINECRAFT });
const offline = await client.servers.executeConsoleCommand({ serverId: server.id, command: "say hi" }, { idempotencyKey: "packed-1" }).catch((e) => e);
const invalid = await client.servers.getServer({ serverId: "nope" }).catch((e) => e);
const walked = [];
for await (const event of client.activity.listOrganizationActivity({ organizationSlug: "packed", limit: 1 })) walked.push(event.action);
const all = await client.activity.listOrganizationActivity({ organizationSlug: "packed", limit: 200 });
console.log(JSON.stringify({
  node: process.version,
  offline: [offline instanceof OutpostError, offline.code, offline.status, offline.reason],
  invalid: [invalid.status, invalid.violations.map((v) => v.field)],
  walked: walked.length,
  events: all.events.length,
}));
`;

const consumer = `
import { createOutpostClient, OutpostError } from "@outpost/client";
import type { ActivityEvent } from "@outpost/client/gen/outpost/activity/v1/activity_service_pb.js";
const client = createOutpostClient({ baseUrl: "https://outpost.example", apiKey: "opk_x", retry: { maxAttempts: 2, maxDelayMs: 1000 } });
export async function buy(serverId: string): Promise<string[]> {
  const res = await client.servers.executeConsoleCommand({ serverId, command: "say hi" }, { idempotencyKey: "purchase-42" });
  const id: string = res.requestId;
  const ok: boolean = res.success;
  for await (const event of client.activity.listOrganizationActivity({ organizationSlug: "acme" })) {
    const typed: ActivityEvent = event;
    console.log(typed.action.length);
  }
  try {
    await client.servers.getServer({ serverId });
  } catch (error) {
    if (error instanceof OutpostError) console.log(error.code, error.status, error.reason, error.violations[0]?.field, error.retryAfterMs);
  }
  return ok ? res.output : [id];
}
// @ts-expect-error -- requests are typed
client.servers.getServer({ serverId: 42 });
`;

/** An app directory whose node_modules holds the unpacked tarball and links to its declared dependencies. */
function installTarball(tarball: string, app: string, dependencies: string[]): Promise<unknown> {
  const scope = join(app, "node_modules/@outpost");
  mkdirSync(scope, { recursive: true });
  for (const dep of dependencies) {
    mkdirSync(dirname(join(app, "node_modules", dep)), { recursive: true });
    symlinkSync(join(root, "node_modules", dep), join(app, "node_modules", dep), "dir");
  }
  return run("tar", ["-xzf", tarball, "-C", scope]).then(() => renameSync(join(scope, "package"), join(scope, "client")));
}

describe("@outpost/client: the packed package", () => {
  let t: TestOutpost;
  let work: string;

  before(async function () {
    if (!existsSync(systemNode)) this.skip();
    work = mkdtempSync(join(tmpdir(), "outpost-client-pack-"));
    t = await startTestOutpost();
  });
  after(async () => {
    await t?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it("packs, installs, type-checks and runs on the machine's Node against a real Outpost", async () => {
    const packed = await run("npm", ["pack", "--json", "--pack-destination", work], { cwd: packageDir, maxBuffer: 16 * 1024 * 1024 });
    const [{ filename, files }] = JSON.parse(packed.stdout.slice(packed.stdout.indexOf("["))) as Array<{ filename: string; files: Array<{ path: string }> }>;
    const paths = files.map((f) => f.path);
    assert.ok(paths.includes("dist/index.js") && paths.includes("dist/index.d.ts") && paths.includes("README.md"), paths.join(", "));
    assert.ok(!paths.some((p) => p.startsWith("src/") || p.includes("agent_service") || p.includes("identity_service")), paths.join(", "));

    const manifest = JSON.parse(readFileSync(join(packageDir, "package.json"), "utf8")) as { dependencies: Record<string, string> };
    const app = join(work, "app");
    await installTarball(join(work, filename), app, Object.keys(manifest.dependencies));
    writeFileSync(join(app, "package.json"), JSON.stringify({ type: "module", private: true }));

    writeFileSync(join(app, "consumer.ts"), consumer);
    const tsconfig = { compilerOptions: { target: "es2022", lib: ["es2022", "dom"], module: "nodenext", strict: true, noEmit: true, types: [] }, files: ["consumer.ts"] };
    writeFileSync(join(app, "tsconfig.json"), JSON.stringify(tsconfig));
    await run(process.execPath, [join(root, "node_modules/typescript/bin/tsc"), "-p", join(app, "tsconfig.json")], { cwd: app }).catch((error: { stdout: string }) => {
      assert.fail(`the consumer does not type-check:\n${error.stdout}`);
    });

    writeFileSync(join(app, "main.mjs"), script);
    const key = await adminApiKey(t, "packed@example.com");
    const { stdout } = await run(systemNode, [join(app, "main.mjs"), t.baseUrl, key], { cwd: app });
    const result = JSON.parse(stdout) as { node: string; offline: unknown[]; invalid: unknown[]; walked: number; events: number };
    assert.equal(result.node, (await run(systemNode, ["--version"])).stdout.trim());
    assert.deepEqual(result.offline, [true, "failed_precondition", 409, "agent_offline"]);
    assert.deepEqual(result.invalid, [400, ["serverId"]]);
    assert.ok(result.events >= 2, `${result.events} events`);
    assert.equal(result.walked, result.events);
  });
});
