import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ZipFile } from "yazl";
import { hostilePaths } from "../support/hostile-paths.ts";
import { refused, useFilesSetting, type Json } from "./files-fixture.ts";

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
  const setting = useFilesSetting();
  const { call, ok, wrapped, grant } = setting;
  let jars: Record<string, Buffer>;
  const list = (serverId: string, key = setting.ownerKey()) => call("GET", `servers/listPlugins?serverId=${serverId}`, undefined, key);
  const setEnabled = (serverId: string, path: string, enabled: boolean, key = setting.ownerKey()) =>
    call("POST", "servers/setPluginEnabled", { serverId, path, enabled }, key);

  before(async () => {
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
    writeFileSync(canary, "outside the server's directory");
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
    assert.deepEqual(refused(await list(server.id, setting.memberKey())), [403, "permission_denied"]);
    assert.deepEqual(refused(await setEnabled(server.id, "plugins/EssentialsX.jar", false, setting.memberKey())), [403, "permission_denied"]);

    await grant(server.id, ["files_write"], ["plugins/*.jar"]);
    const listed = await list(server.id, setting.memberKey());
    assert.equal(listed.status, 200, JSON.stringify(listed.body));
    assert.deepEqual(
      (listed.body as Json[]).map((p) => p.path),
      ["plugins/Broken.jar", "plugins/EssentialsX.jar"],
      "what the grant reaches: no mods, no disabled jar",
    );
    assert.deepEqual(refused(await setEnabled(server.id, "plugins/EssentialsX.jar", false, setting.memberKey())), [403, "permission_denied"]);
    assert.ok(existsSync(join(server.root, "plugins/EssentialsX.jar")));

    const other = await wrapped("Member plugins folder", jars);
    await grant(other.id, ["files_write"], ["plugins"]);
    const switched = await setEnabled(other.id, "plugins/EssentialsX.jar", false, setting.memberKey());
    assert.equal(switched.status, 200, JSON.stringify(switched.body));
    assert.ok(existsSync(join(other.root, "plugins/EssentialsX.jar.disabled")));
    assert.deepEqual(refused(await setEnabled(other.id, "mods/lithium.jar", false, setting.memberKey())), [403, "permission_denied"]);
  });
});
