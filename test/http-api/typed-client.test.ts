import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import openapiTS, { astToString } from "openapi-typescript";
import { startTestOutpost, type TestOutpost } from "../support/outpost.ts";

const run = promisify(execFile);
const root = fileURLToPath(new URL("../..", import.meta.url));

/** A script's client, typed by what openapi-typescript generates from the served document. */
const clientSource = `
import createClient from "openapi-fetch";
import type { paths } from "./outpost-api.js";

const client = createClient<paths>({ baseUrl: process.env.OUTPOST_URL, headers: { "X-API-Key": process.env.OUTPOST_KEY! } });

const org = await client.POST("/api/http/organizations/createOrganization", { body: { name: "Typed", slug: "typed" } });
if (!org.data) throw new Error(JSON.stringify(org.error));
const created = await client.POST("/api/http/servers/createServer", {
  body: { organizationSlug: org.data.organization!.slug, name: "Survival", game: "minecraft" },
});
if (!created.data) throw new Error(JSON.stringify(created.error));
const list = await client.GET("/api/http/servers/listServers", { params: { query: { organizationSlug: "typed" } } });
if (!list.data) throw new Error(JSON.stringify(list.error));
const names: string[] = list.data.map((server) => server.name);

// The generated types refuse what the API refuses.
// @ts-expect-error a game the API does not know
void client.POST("/api/http/servers/createServer", { body: { organizationSlug: "typed", name: "x", game: "chess" } });
// @ts-expect-error listServers is a GET
void client.POST("/api/http/servers/listServers", { body: { organizationSlug: "typed" } });
// @ts-expect-error organizationSlug is required
void client.GET("/api/http/servers/listServers", { params: { query: {} } });

const refused = await client.POST("/api/http/servers/createServer", { body: { organizationSlug: "typed", name: "", game: "hytale" } });
console.log(JSON.stringify({ slug: org.data.organization!.slug, agentKey: created.data.agentKey, names, refusedStatus: refused.response.status, refusedCode: refused.error?.code }));
`;

describe("http api: a typed client generated from the OpenAPI document", function () {
  this.timeout(120_000);
  let t: TestOutpost;
  let dir: string;

  before(async () => {
    t = await startTestOutpost();
    mkdirSync(join(root, ".test-artifacts"), { recursive: true });
    dir = mkdtempSync(join(root, ".test-artifacts", "typed-client-"));
  });
  after(async () => {
    await t?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("generates types from /api/http/openapi.json, typechecks a client, and uses it to create an organization and a server and list servers", async () => {
    const document = await (await fetch(`${t.baseUrl}/api/http/openapi.json`)).json();
    writeFileSync(join(dir, "outpost-api.d.ts"), astToString(await openapiTS(document as Parameters<typeof openapiTS>[0])));
    writeFileSync(join(dir, "client.ts"), clientSource);
    writeFileSync(
      join(dir, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: { target: "es2024", module: "nodenext", moduleResolution: "nodenext", strict: true, noEmit: true, types: ["node"], skipLibCheck: true },
        files: ["client.ts"],
      }),
    );
    const tsc = join(root, "node_modules/.bin/tsc");
    await run(tsc, ["-p", join(dir, "tsconfig.json")], { cwd: dir }).catch((error) => {
      assert.fail(`the generated client does not typecheck:\n${error.stdout}${error.stderr}`);
    });

    const signUp = await fetch(`${t.baseUrl}/sign-up`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: "typed@example.com", password: "a long password", name: "" }),
    });
    const cookie = signUp.headers.get("set-cookie")!.split(";")[0];
    const key = (
      (await (
        await fetch(`${t.baseUrl}/api/http/auth/createApiKey`, {
          method: "POST",
          headers: { "content-type": "application/json", cookie },
          body: JSON.stringify({ name: "typed client" }),
        })
      ).json()) as { key: string }
    ).key;

    const { stdout } = await run(process.execPath, [join(dir, "client.ts")], {
      cwd: dir,
      env: { ...process.env, OUTPOST_URL: t.baseUrl, OUTPOST_KEY: key },
    });
    const result = JSON.parse(stdout.trim().split("\n").pop()!);
    assert.equal(result.slug, "typed");
    assert.match(result.agentKey, /^opa_/);
    assert.deepEqual(result.names, ["Survival"]);
    assert.equal(result.refusedStatus, 400);
    assert.equal(result.refusedCode, "invalid_argument");
  });
});
