import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ZipFile } from "yazl";
import { startTestOutpost, type TestOutpost } from "../support/outpost.ts";
import { startAgentProcess, type AgentProcess } from "../support/agent.ts";
import { verifyEmail } from "../support/fixtures.ts";
import { hostilePaths } from "../support/hostile-paths.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- JSON from the HTTP API, read field by field
type Json = any;

const origin = "http://localhost:3000";

/** A real jar (a zip made by yazl) holding `entries`. */
async function jar(entries: Record<string, string>): Promise<Buffer> {
  const zip = new ZipFile();
  for (const [name, content] of Object.entries(entries)) zip.addBuffer(Buffer.from(content), name);
  zip.end();
  const chunks: Buffer[] = [];
  for await (const chunk of zip.outputStream as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/**
 * The plugins panel end to end: a script's calls through the HTTP API, Outpost, the agent stream
 * and the real `outpost-agent wrap` process around a stand-in server whose directory holds real
 * jars, renamed on disk when a plugin is switched off and on.
 */
describe("servers: plugins through the agent", function () {
  this.timeout(120_000);
  let t: TestOutpost;
  let ownerKey: string;
  let memberKey: string;
  let memberId: string;
  let jars: Record<string, Buffer>;
  const running: AgentProcess[] = [];
  const dirs: string[] = [];

  const account = async (email: string) => {
    const signUp = await fetch(`${t.baseUrl}/sign-up`, {
      method: "POST",
      headers: { "content-type": "application/json", origin },
      body: JSON.stringify({ email, password: "a long password", name: email.split("@")[0] }),
    });
    assert.equal(signUp.status, 201);
    const session = signUp.headers.get("set-cookie")!.split(";")[0];
    const created = await fetch(`${t.baseUrl}/api/http/auth/createApiKey`, {
      method: "POST",
      headers: { cookie: session, origin, "content-type": "application/json" },
      body: JSON.stringify({ name: "tests", expiresInDays: 30 }),
    });
    return ((await created.json()) as Json).key as string;
  };
  const call = async (method: "GET" | "POST", path: string, body?: unknown, key = ownerKey) => {
    const res = await fetch(`${t.baseUrl}/api/http/${path}`, {
      method,
      headers: { "x-api-key": key, ...(body ? { "content-type": "application/json" } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : undefined) as Json };
  };
  const ok = async (method: "GET" | "POST", path: string, body?: unknown, key = ownerKey) => {
    const res = await call(method, path, body, key);
    assert.equal(res.status, 200, `${path}: ${JSON.stringify(res.body)}`);
    return res.body;
  };
  const refused = (res: { status: number; body: Json }) => [res.status, res.body?.reason];
  const list = (serverId: string, key = ownerKey) => call("GET", `servers/listPlugins?serverId=${serverId}`, undefined, key);
  const setEnabled = (serverId: string, path: string, enabled: boolean, key = ownerKey) => call("POST", "servers/setPluginEnabled", { serverId, path, enabled }, key);

  /** A server, and `outpost-agent wrap` around the stand-in in a directory holding `files`. */
  const wrapped = async (name: string, files: Record<string, string | Buffer>) => {
    const { server, agentKey } = await ok("POST", "servers/createServer", { organizationSlug: "acme", name, game: "minecraft" });
    const base = mkdtempSync(join(tmpdir(), "outpost-plugins-"));
    dirs.push(base);
    const root = join(base, "server");
    mkdirSync(root);
    writeFileSync(join(base, "canary.jar"), "outside the server's directory");
    for (const [path, content] of Object.entries(files)) {
      mkdirSync(join(root, path, ".."), { recursive: true });
      writeFileSync(join(root, path), content);
    }
    const standIn = new URL("../agent/fixtures/stand-in-server.ts", import.meta.url).pathname;
    const args = ["wrap", "--url", t.baseUrl, "--key", agentKey, "--auth", "online", "--", process.execPath, standIn, "--format", "paper"];
    const agent = startAgentProcess(args, {}, root);
    running.push(agent);
    await agent.waitFor(/\[outpost\] connected to Outpost/);
    return { id: server.id as string, root, base };
  };

  before(async () => {
    // The hostile paths make some 500 calls in seconds: past the default 600 a minute with the rest.
    t = await startTestOutpost({ PLANS: '{"free":{"servers":50,"gameOAuthClients":2}}', RATE_LIMIT_PER_MINUTE: "100000" });
    ownerKey = await account("owner@example.com");
    await ok("POST", "organizations/createOrganization", { name: "Acme", slug: "acme" });
    memberKey = await account("member@example.com");
    await verifyEmail(t, "member@example.com");
    const { token } = await ok("POST", "organizations/addMember", { organizationSlug: "acme", email: "member@example.com", role: "member" });
    memberId = (await ok("POST", "organizations/acceptInvitation", { token }, memberKey)).member.userId;
    jars = {
      "plugins/EssentialsX.jar": await jar({
        "plugin.yml": "name: EssentialsX\nversion: 2.21.0\nauthors: [zml, vemacs]\ndescription: The essential plugin suite.\napi-version: '1.13'\n",
      }),
      "plugins/Squaremap.jar.disabled": await jar({ "paper-plugin.yml": "name: squaremap\nversion: 1.2.3\nauthor: jpenilla\napi-version: '1.20'\n" }),
      "mods/lithium.jar": await jar({
        "fabric.mod.json": JSON.stringify({ id: "lithium", name: "Lithium", version: "0.11.2", authors: [{ name: "JellySquid" }], depends: { minecraft: "1.20.1" } }),
      }),
      "plugins/Broken.jar": Buffer.from("not a zip"),
    };
  });
  after(async () => {
    await Promise.all(running.map((agent) => agent.stop("SIGKILL")));
    await t?.close();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it("lists the plugins and mods as their jars describe themselves, and switches one off and on by renaming it", async () => {
    const server = await wrapped("Plugins", { ...jars, "plugins/EssentialsX/config.yml": "spawn: true\n" });
    const listed = await ok("GET", `servers/listPlugins?serverId=${server.id}`);
    assert.deepEqual(
      (listed as Json[]).map((p) => [p.path, p.loader, p.name, p.version, p.authors, p.enabled, p.apiVersion]),
      [
        ["mods/lithium.jar", "fabric", "Lithium", "0.11.2", ["JellySquid"], true, "1.20.1"],
        ["plugins/Broken.jar", "", "Broken", "", [], true, ""],
        ["plugins/EssentialsX.jar", "bukkit", "EssentialsX", "2.21.0", ["zml", "vemacs"], true, "1.13"],
        ["plugins/Squaremap.jar.disabled", "paper", "squaremap", "1.2.3", ["jpenilla"], false, "1.20"],
      ],
    );
    const essentials = (listed as Json[])[2];
    assert.deepEqual([essentials.size, essentials.description, essentials.problem], [String(jars["plugins/EssentialsX.jar"].length), "The essential plugin suite.", ""]);
    assert.match((listed as Json[])[1].problem, /not a jar/);

    const disabled = await setEnabled(server.id, "plugins/EssentialsX.jar", false);
    assert.equal(disabled.status, 200, JSON.stringify(disabled.body));
    assert.equal(disabled.body.restartRequired, true);
    assert.deepEqual([disabled.body.plugin.path, disabled.body.plugin.enabled, disabled.body.plugin.name], ["plugins/EssentialsX.jar.disabled", false, "EssentialsX"]);
    assert.ok(existsSync(join(server.root, "plugins/EssentialsX.jar.disabled")) && !existsSync(join(server.root, "plugins/EssentialsX.jar")), "renamed on disk");

    const enabled = await setEnabled(server.id, "plugins/EssentialsX.jar.disabled", true);
    assert.equal(enabled.status, 200, JSON.stringify(enabled.body));
    assert.deepEqual([enabled.body.plugin.path, enabled.body.plugin.enabled, enabled.body.restartRequired], ["plugins/EssentialsX.jar", true, true]);
    assert.ok(existsSync(join(server.root, "plugins/EssentialsX.jar")) && !existsSync(join(server.root, "plugins/EssentialsX.jar.disabled")));
    await ok("POST", "servers/setPluginEnabled", { serverId: server.id, path: "mods/lithium.jar", enabled: true });

    const { events } = await ok("GET", `activity/listOrganizationActivity?organizationSlug=acme&serverId=${server.id}`);
    const changes = (events as Json[]).filter((e) => e.action.startsWith("server.plugin")).reverse();
    assert.deepEqual(
      changes.map((e) => [e.action, e.kind, e.details]),
      [
        ["server.plugin_disabled", "player_admin", { path: "plugins/EssentialsX.jar.disabled", from: "plugins/EssentialsX.jar", name: "EssentialsX", version: "2.21.0" }],
        ["server.plugin_enabled", "player_admin", { path: "plugins/EssentialsX.jar", from: "plugins/EssentialsX.jar.disabled", name: "EssentialsX", version: "2.21.0" }],
      ],
      "each change on record; enabling what was enabled changed nothing",
    );
  });

  it("refuses a missing jar, a path that is no jar, a rename onto a name taken, and every hostile path", async () => {
    const server = await wrapped("Plugin refusals", { "plugins/A.jar": jars["plugins/EssentialsX.jar"], "plugins/A.jar.disabled": jars["plugins/EssentialsX.jar"] });
    assert.deepEqual(refused(await setEnabled(server.id, "plugins/Missing.jar", false)), [404, "not_found"]);
    assert.deepEqual(refused(await setEnabled(server.id, "server.properties", false)), [400, "invalid_path"]);
    assert.deepEqual(refused(await setEnabled(server.id, "plugins/sub/A.jar", false)), [400, "invalid_path"]);
    assert.deepEqual(refused(await setEnabled(server.id, "../plugins/A.jar", false)), [400, "outside_root"]);
    assert.deepEqual(refused(await setEnabled(server.id, "plugins/A.jar", false)), [409, "already_exists"]);
    assert.ok(existsSync(join(server.root, "plugins/A.jar")) && existsSync(join(server.root, "plugins/A.jar.disabled")), "both left as they were");

    const canary = join(server.base, "canary.jar");
    const before = [readdirSync(server.base).sort(), readdirSync(join(server.root, "plugins")).sort()];
    const paths = hostilePaths(canary).flatMap((hostile) => [hostile, `${hostile}.jar`, `${hostile}.jar.disabled`]);
    for (let start = 0; start < paths.length; start += 16) {
      const batch = paths.slice(start, start + 16);
      const answers = await Promise.all(batch.map((path) => setEnabled(server.id, path, true)));
      answers.forEach((res, i) => assert.ok(res.status === 400 || res.status === 404, `${JSON.stringify(batch[i])}: ${res.status} ${JSON.stringify(res.body)}`));
    }
    assert.deepEqual([readdirSync(server.base).sort(), readdirSync(join(server.root, "plugins")).sort()], before, "nothing renamed, inside or out");
    assert.equal(readFileSync(canary, "utf8"), "outside the server's directory");
  });

  it("a member needs a files grant: none is 403; plugins/*.jar lists those jars and switches none (the disabled name is not granted)", async () => {
    const server = await wrapped("Member plugins", jars);
    assert.deepEqual(refused(await list(server.id, memberKey)), [403, "permission_denied"]);
    assert.deepEqual(refused(await setEnabled(server.id, "plugins/EssentialsX.jar", false, memberKey)), [403, "permission_denied"]);

    await ok("POST", "organizations/createAccessGrant", {
      organizationSlug: "acme",
      userId: memberId,
      serverId: server.id,
      actions: ["files_write"],
      constraints: { filePaths: ["plugins/*.jar"] },
    });
    const listed = await list(server.id, memberKey);
    assert.equal(listed.status, 200, JSON.stringify(listed.body));
    assert.deepEqual(
      (listed.body as Json[]).map((p) => p.path),
      ["plugins/Broken.jar", "plugins/EssentialsX.jar"],
      "what the grant reaches: no mods, no disabled jar",
    );
    assert.deepEqual(refused(await setEnabled(server.id, "plugins/EssentialsX.jar", false, memberKey)), [403, "permission_denied"]);
    assert.ok(existsSync(join(server.root, "plugins/EssentialsX.jar")));

    const other = await wrapped("Member plugins folder", jars);
    await ok("POST", "organizations/createAccessGrant", {
      organizationSlug: "acme",
      userId: memberId,
      serverId: other.id,
      actions: ["files_write"],
      constraints: { filePaths: ["plugins"] },
    });
    const switched = await setEnabled(other.id, "plugins/EssentialsX.jar", false, memberKey);
    assert.equal(switched.status, 200, JSON.stringify(switched.body));
    assert.ok(existsSync(join(other.root, "plugins/EssentialsX.jar.disabled")));
    assert.deepEqual(refused(await setEnabled(other.id, "mods/lithium.jar", false, memberKey)), [403, "permission_denied"]);
  });
});
