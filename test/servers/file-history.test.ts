import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import { refused, useFilesSetting, type Json } from "./files-fixture.ts";

const sha256 = (content: string | Buffer) => createHash("sha256").update(content).digest("hex");

/**
 * A file's history and search end to end: a script's calls through the HTTP API, Outpost, the agent
 * stream and the real `outpost-agent wrap` process, with what is on disk checked directly.
 */
describe("servers: file history and search through the agent", function () {
  this.timeout(120_000);
  const setting = useFilesSetting();
  const { call, ok, get, wrapped, grant: grantMember } = setting;
  const keys = {
    get owner() {
      return setting.ownerKey();
    },
    get member() {
      return setting.memberKey();
    },
  };

  it("keeps each version an edit replaces; restoring one brings it back on disk, keeps the current, and is on record", async () => {
    const [one, two, three] = ["motd=one\n", "motd=two\n", "motd=three\n"];
    const server = await wrapped("History", { "server.properties": one });
    const history = async () => (await ok("GET", `servers/listFileHistory?serverId=${server.id}&path=server.properties`)).versions as Json[];
    assert.deepEqual(await history(), [], "nothing replaced yet");

    const first = await ok("GET", `servers/readFile?serverId=${server.id}&path=server.properties`);
    const edited = await ok("POST", "servers/writeFile", { serverId: server.id, path: "server.properties", content: two, expectedSha256: first.sha256 });
    await ok("POST", "servers/writeFile", { serverId: server.id, path: "server.properties", content: three, expectedSha256: edited.sha256 });
    const versions = await history();
    assert.deepEqual(
      versions.map((v) => [v.size, v.sha256]),
      [
        [String(Buffer.byteLength(two)), sha256(two)],
        [String(Buffer.byteLength(one)), sha256(one)],
      ],
      "newest first",
    );
    assert.ok(Date.parse(versions[0].savedAt) >= Date.parse(versions[1].savedAt));
    assert.ok(existsSync(join(server.root, ".outpost", "history")), "kept in the server's directory");

    const oldest = versions[1];
    const restored = await ok("POST", "servers/restoreFileVersion", {
      serverId: server.id,
      path: "server.properties",
      versionId: oldest.id,
      expectedSha256: sha256(three),
    });
    assert.deepEqual([restored.path, restored.size, restored.sha256], ["server.properties", String(Buffer.byteLength(one)), sha256(one)]);
    assert.equal(readFileSync(join(server.root, "server.properties"), "utf8"), one, "the first version is back on disk");
    assert.deepEqual(
      (await history()).map((v) => v.sha256),
      [sha256(three), sha256(two), sha256(one)],
      "the file restored over is kept in turn",
    );

    const stale = await call("POST", "servers/restoreFileVersion", {
      serverId: server.id,
      path: "server.properties",
      versionId: versions[0].id,
      expectedSha256: sha256(three),
    });
    assert.deepEqual(refused(stale), [409, "edit_conflict"]);
    const unknown = await call("POST", "servers/restoreFileVersion", { serverId: server.id, path: "server.properties", versionId: `1-1-${"0".repeat(64)}` });
    assert.deepEqual(refused(unknown), [404, "not_found"]);
    const badId = await call("POST", "servers/restoreFileVersion", { serverId: server.id, path: "server.properties", versionId: "../x" });
    assert.deepEqual([badId.status, badId.body.code], [400, "invalid_argument"], "a version id the contract's pattern refuses");
    assert.equal(readFileSync(join(server.root, "server.properties"), "utf8"), one, "refusals changed nothing");

    const { events } = await ok("GET", `activity/listOrganizationActivity?organizationSlug=acme&serverId=${server.id}`);
    const restores = (events as Json[]).filter((e) => e.action === "server.file_restored");
    assert.deepEqual(
      restores.map((e) => [e.kind, e.severity, e.details]),
      [["player_admin", "info", { path: "server.properties", versionId: oldest.id, size: String(Buffer.byteLength(one)), sha256: sha256(one) }]],
    );
  });

  it("brings a deleted file back, and keeps .outpost out of every procedure's reach", async () => {
    const server = await wrapped("Undelete", { "ops.json": "[]\n" });
    await ok("POST", "servers/deleteFile", { serverId: server.id, path: "ops.json" });
    assert.ok(!existsSync(join(server.root, "ops.json")));
    const [deleted] = (await ok("GET", `servers/listFileHistory?serverId=${server.id}&path=ops.json`)).versions;
    await ok("POST", "servers/restoreFileVersion", { serverId: server.id, path: "ops.json", versionId: deleted.id });
    assert.equal(readFileSync(join(server.root, "ops.json"), "utf8"), "[]\n");

    const root = await ok("GET", `servers/listFiles?serverId=${server.id}&path=`);
    assert.deepEqual(
      root.entries.map((e: Json) => e.name),
      ["ops.json"],
      ".outpost is not listed",
    );
    const [folder] = readdirSync(join(server.root, ".outpost/history"));
    const kept = `.outpost/history/${folder}/path.json`;
    assert.deepEqual(refused(await get("listFiles", { serverId: server.id, path: ".outpost" })), [404, "not_found"]);
    assert.deepEqual(refused(await get("readFile", { serverId: server.id, path: kept })), [404, "not_found"]);
    assert.deepEqual(refused(await get("searchFiles", { serverId: server.id, path: ".outpost", query: "ops" })), [404, "not_found"]);
    assert.deepEqual(refused(await call("POST", "servers/writeFile", { serverId: server.id, path: kept, content: "x" })), [403, "denied"]);
    assert.deepEqual(refused(await call("POST", "servers/deleteFile", { serverId: server.id, path: ".outpost", recursive: true })), [403, "denied"]);
    assert.deepEqual(refused(await call("POST", "servers/moveFile", { serverId: server.id, from: kept, to: "stolen.json" })), [403, "denied"]);
    assert.ok(existsSync(join(server.root, kept)));
  });

  it("a member lists history with files_read and restores with files_write, at their grant's paths only", async () => {
    const server = await wrapped("Member history", { "plugins/Essentials/config.yml": "a\n", "server.properties": "b\n" });
    await ok("POST", "servers/writeFile", { serverId: server.id, path: "plugins/Essentials/config.yml", content: "a2\n" });
    await ok("POST", "servers/writeFile", { serverId: server.id, path: "server.properties", content: "b2\n" });
    await grantMember(server.id, ["files_read"], ["plugins/Essentials/**"]);
    const versions = await ok("GET", `servers/listFileHistory?serverId=${server.id}&path=plugins/Essentials/config.yml`, undefined, keys.member);
    assert.equal(versions.versions.length, 1);
    const elsewhere = await get("listFileHistory", { serverId: server.id, path: "server.properties" }, keys.member);
    assert.deepEqual(refused(elsewhere), [403, "permission_denied"]);
    const restore = { serverId: server.id, path: "plugins/Essentials/config.yml", versionId: versions.versions[0].id };
    assert.deepEqual(refused(await call("POST", "servers/restoreFileVersion", restore, keys.member)), [403, "permission_denied"], "reading is not restoring");
    assert.equal(readFileSync(join(server.root, "plugins/Essentials/config.yml"), "utf8"), "a2\n");
  });

  it("searches the text files under a folder; a member hears only of the files their grant reaches", async () => {
    const server = await wrapped(
      "Search",
      {
        "server.properties": "motd=A Minecraft Server\nmax-players=20\n",
        "plugins/Essentials/config.yml": "motd: welcome\n# MOTD shown at join\n",
        "plugins/Other/config.yml": "motd: other\n",
        "secrets/token.txt": "motd secret",
        "world/level.dat": Buffer.from([0x6d, 0x6f, 0x74, 0x64, 0, 1]),
      },
      ["--files-deny", "secrets/**"],
    );
    const search = (params: Record<string, string>, key = keys.owner) => get("searchFiles", { serverId: server.id, ...params }, key);
    const lines = (body: Json) => (body.matches as Json[]).map((m) => `${m.path}:${m.lineNumber}:${m.line}`);

    const all = await search({ path: "", query: "motd" });
    assert.equal(all.status, 200, JSON.stringify(all.body));
    assert.deepEqual(lines(all.body), [
      "plugins/Essentials/config.yml:1:motd: welcome",
      "plugins/Essentials/config.yml:2:# MOTD shown at join",
      "plugins/Other/config.yml:1:motd: other",
      "server.properties:1:motd=A Minecraft Server",
    ]);
    assert.equal(all.body.truncated, false);
    assert.deepEqual(lines((await search({ path: "", query: "MOTD", caseSensitive: "true" })).body), ["plugins/Essentials/config.yml:2:# MOTD shown at join"]);
    const one = (await search({ path: "plugins", query: "motd", maxResults: "1" })).body;
    assert.deepEqual([one.matches.length, one.truncated], [1, true]);
    assert.deepEqual(refused(await search({ path: "server.properties", query: "motd" })), [409, "not_a_directory"]);
    const empty = await search({ path: "", query: "" });
    assert.deepEqual([empty.status, empty.body.code], [400, "invalid_argument"]);

    await grantMember(server.id, ["files_read"], ["plugins/Essentials/**"]);
    const members = await search({ path: "", query: "motd" }, keys.member);
    assert.equal(members.status, 200, JSON.stringify(members.body));
    assert.deepEqual(lines(members.body), ["plugins/Essentials/config.yml:1:motd: welcome", "plugins/Essentials/config.yml:2:# MOTD shown at join"]);
    assert.deepEqual(lines((await search({ path: "plugins", query: "motd" }, keys.member)).body).length, 2);
    assert.deepEqual(refused(await search({ path: "plugins/Other", query: "motd" }, keys.member)), [403, "permission_denied"]);
    assert.deepEqual(refused(await search({ path: "world", query: "motd" }, keys.member)), [403, "permission_denied"]);
  });

  it("answers a history for a file deleted outside Outpost, and a search of a folder removed meanwhile as not_found", async () => {
    const server = await wrapped("Outside changes", { "notes.txt": "one\n" });
    await ok("POST", "servers/writeFile", { serverId: server.id, path: "notes.txt", content: "two\n" });
    unlinkSync(join(server.root, "notes.txt"));
    const { versions } = await ok("GET", `servers/listFileHistory?serverId=${server.id}&path=notes.txt`);
    assert.equal(versions.length, 1);
    assert.deepEqual(refused(await get("searchFiles", { serverId: server.id, path: "gone", query: "x" })), [404, "not_found"]);
  });
});
