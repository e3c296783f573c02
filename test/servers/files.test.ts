import assert from "node:assert/strict";
import { createHash, randomUUID } from "node:crypto";
import { existsSync, promises as fsp, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { hostilePaths } from "../support/hostile-paths.ts";
import { refused, useFilesSetting, type Json } from "./files-fixture.ts";

const sha256 = (content: string | Buffer) => createHash("sha256").update(content).digest("hex");

/**
 * The files procedures end to end: a script's calls through the HTTP API, Outpost, the agent
 * stream and the real `outpost-agent wrap` process around a stand-in server in a directory of its
 * own, whose files the test reads and writes directly to check what really happened on disk.
 */
describe("servers: files through the agent", function () {
  this.timeout(120_000);
  const setting = useFilesSetting();
  const { call, ok, get, wrapped, grant, memberKey: member } = setting;

  it("browses, reads, edits with a conflict check, and each change is on disk and on record (never its content)", async () => {
    const properties = "motd=A Minecraft Server\nmax-players=20\n";
    const server = await wrapped(
      "Files",
      {
        "server.properties": properties,
        "plugins/Essentials/config.yml": "spawn: true\n",
        "world/level.dat": Buffer.from([0x1f, 0x8b, 0, 1, 2]),
        "secrets/token.txt": "do not show",
      },
      ["--files-deny", "secrets/**"],
    );
    const { server: shown } = await ok("GET", `servers/getServer?serverId=${server.id}`);
    assert.equal(shown.files, "on");

    const root = await ok("GET", `servers/listFiles?serverId=${server.id}&path=`);
    assert.deepEqual(
      root.entries.map((e: Json) => [e.name, e.type]),
      [
        ["plugins", "directory"],
        ["world", "directory"],
        ["server.properties", "file"],
      ],
      "directories first, then files, by name; the denied folder is not there",
    );
    assert.equal(root.entries[2].size, String(Buffer.byteLength(properties)));

    const read = await ok("GET", `servers/readFile?serverId=${server.id}&path=server.properties`);
    assert.deepEqual([read.content, read.encoding, read.size, read.sha256], [properties, "utf8", String(Buffer.byteLength(properties)), sha256(properties)]);
    const binary = await ok("GET", `servers/readFile?serverId=${server.id}&path=world/level.dat`);
    assert.deepEqual([binary.encoding, Buffer.from(binary.content, "base64")], ["base64", Buffer.from([0x1f, 0x8b, 0, 1, 2])]);

    const edited = properties.replace("max-players=20", "max-players=40");
    const written = await ok("POST", "servers/writeFile", { serverId: server.id, path: "server.properties", content: edited, expectedSha256: read.sha256 });
    assert.deepEqual([written.path, written.size, written.sha256], ["server.properties", String(Buffer.byteLength(edited)), sha256(edited)]);
    assert.equal(readFileSync(join(server.root, "server.properties"), "utf8"), edited);

    // The same edit again, from the version read before: the file changed meanwhile.
    const conflict = await call("POST", "servers/writeFile", { serverId: server.id, path: "server.properties", content: "motd=lost\n", expectedSha256: read.sha256 });
    assert.deepEqual(refused(conflict), [409, "edit_conflict"]);
    assert.equal(readFileSync(join(server.root, "server.properties"), "utf8"), edited, "nothing written over the newer version");

    const bytes = Buffer.from([0, 255, 10, 13]);
    await ok("POST", "servers/writeFile", { serverId: server.id, path: "world/data.bin", content: bytes.toString("base64"), encoding: "base64" });
    assert.deepEqual(readFileSync(join(server.root, "world/data.bin")), bytes);
    assert.deepEqual(refused(await call("POST", "servers/writeFile", { serverId: server.id, path: "x.bin", content: "not base64!", encoding: "base64" })), [
      400,
      "invalid_argument",
    ]);

    await ok("POST", "servers/createDirectory", { serverId: server.id, path: "plugins/New" });
    assert.ok(existsSync(join(server.root, "plugins/New")));
    assert.deepEqual(refused(await call("POST", "servers/createDirectory", { serverId: server.id, path: "plugins/New" })), [409, "already_exists"]);
    await ok("POST", "servers/moveFile", { serverId: server.id, from: "plugins/Essentials/config.yml", to: "plugins/New/config.yml" });
    assert.equal(readFileSync(join(server.root, "plugins/New/config.yml"), "utf8"), "spawn: true\n");
    assert.deepEqual(refused(await call("POST", "servers/moveFile", { serverId: server.id, from: "server.properties", to: "plugins/New/config.yml" })), [
      409,
      "already_exists",
    ]);
    assert.deepEqual(refused(await call("POST", "servers/deleteFile", { serverId: server.id, path: "plugins/New" })), [409, "directory_not_empty"]);
    await ok("POST", "servers/deleteFile", { serverId: server.id, path: "plugins/New", recursive: true });
    assert.ok(!existsSync(join(server.root, "plugins/New")));

    const { events } = await ok("GET", `activity/listOrganizationActivity?organizationSlug=acme&serverId=${server.id}`);
    const changes = (events as Json[]).filter((e) => e.action.startsWith("server.file") || e.action === "server.directory_created").reverse();
    assert.deepEqual(
      changes.map((e) => [e.action, e.details]),
      [
        ["server.file_written", { path: "server.properties", size: String(Buffer.byteLength(edited)), sha256: sha256(edited), previousSha256: read.sha256 }],
        ["server.file_written", { path: "world/data.bin", size: "4", sha256: sha256(bytes) }],
        ["server.directory_created", { path: "plugins/New" }],
        ["server.file_moved", { from: "plugins/Essentials/config.yml", to: "plugins/New/config.yml" }],
        ["server.file_deleted", { path: "plugins/New", recursive: "true" }],
      ],
      "every change that happened, with paths, sizes and hashes; refusals changed nothing and are not changes",
    );
    assert.ok(!JSON.stringify(events).includes("max-players=40"), "never the content");
  });

  it("answers each refusal with its status and reason: missing, wrong kind, denied, too large, outside", async () => {
    const server = await wrapped("Refusals", { "server.properties": "a=b\n", "logs/latest.log": "x", "secrets/token.txt": "hidden" }, ["--files-deny", "secrets/**"]);
    symlinkSync(join(server.base, "canary.txt"), join(server.root, "escape.txt"));
    writeFileSync(join(server.root, "huge.log"), Buffer.alloc(5 * 1024 * 1024 + 1, 0x61));
    const read = (path: string) => get("readFile", { serverId: server.id, path });
    assert.deepEqual(refused(await read("nothing.txt")), [404, "not_found"]);
    assert.deepEqual(refused(await read("logs")), [409, "not_a_regular_file"]);
    assert.deepEqual(refused(await get("listFiles", { serverId: server.id, path: "server.properties" })), [409, "not_a_directory"]);
    assert.deepEqual(refused(await read("secrets/token.txt")), [404, "not_found"], "a denied path reads as absent");
    assert.deepEqual(refused(await call("POST", "servers/writeFile", { serverId: server.id, path: "secrets/new.txt", content: "x" })), [403, "denied"]);
    const tooLarge = await read("huge.log");
    assert.deepEqual(refused(tooLarge), [413, "too_large"]);
    assert.match(tooLarge.body.message, /download/);
    assert.deepEqual(refused(await read("escape.txt")), [400, "outside_root"], "a symlink out of the directory is refused, never followed");
    assert.equal(readFileSync(join(server.base, "canary.txt"), "utf8"), "outside the server's directory");
    assert.deepEqual(refused(await read("../canary.txt")), [400, "outside_root"]);
    assert.deepEqual(refused(await get("readFile", { serverId: randomUUID(), path: "a" })), [404, "not_found"]);
  });

  it("refuses every one of at least 200 hostile paths in every procedure, and nothing outside the directory changes", async () => {
    const server = await wrapped("Hostile", { "server.properties": "a=b\n" });
    const canary = join(server.base, "canary.txt");
    const paths = hostilePaths(canary);
    assert.ok(paths.length >= 200, `${paths.length} paths`);
    const before = readdirSync(server.base).sort();
    const statuses = new Map<number, number>();
    for (const path of paths) {
      const attempts = [
        get("readFile", { serverId: server.id, path }),
        get("listFiles", { serverId: server.id, path }),
        call("POST", "servers/writeFile", { serverId: server.id, path, content: "pwned" }),
        call("POST", "servers/moveFile", { serverId: server.id, from: "server.properties", to: path, overwrite: true }),
        call("POST", "servers/deleteFile", { serverId: server.id, path, recursive: true }),
      ];
      for (const res of await Promise.all(attempts)) {
        assert.ok(res.status >= 400 && res.status < 500, `${JSON.stringify(path)}: ${res.status} ${JSON.stringify(res.body)}`);
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      }
    }
    assert.deepEqual(readdirSync(server.base).sort(), before);
    assert.equal(readFileSync(canary, "utf8"), "outside the server's directory");
    assert.equal(readFileSync(join(server.root, "server.properties"), "utf8"), "a=b\n", "not moved over, not written");
    // A lone surrogate in a query string arrives as U+FFFD, a name that may exist: not found, inside.
    assert.deepEqual(
      [...statuses.keys()].filter((status) => status !== 400 && status !== 404),
      [],
      "each refused as a bad path, or not found inside",
    );
    assert.ok((statuses.get(400) ?? 0) > paths.length * 4, "nearly all refused as bad paths");
  });

  it("never follows a symlink swapped in between its check and its open, whatever the timing", async () => {
    const server = await wrapped("Swapped", { "swap.txt": "inside" });
    const canary = join(server.base, "canary.txt");
    const [asLink, asFile, target] = [join(server.base, "swap-link"), join(server.base, "swap-file"), join(server.root, "swap.txt")];
    // The test swaps swap.txt between a file and a symlink out of the directory as fast as it can
    // (each rename atomic), while the agent reads, downloads and writes it through Outpost.
    let swapping = true;
    let swaps = 0;
    const swapper = (async () => {
      while (swapping) {
        await fsp.symlink(canary, asLink);
        await fsp.rename(asLink, target);
        await fsp.writeFile(asFile, "inside");
        await fsp.rename(asFile, target);
        swaps++;
      }
    })();
    const outcomes = new Map<string, number>();
    try {
      for (let round = 0; round < 100; round++) {
        const [read, download, write] = await Promise.all([
          get("readFile", { serverId: server.id, path: "swap.txt" }),
          fetch(`${setting.outpost().baseUrl}/api/http/servers/downloadFile?${new URLSearchParams({ serverId: server.id, path: "swap.txt" })}`, {
            headers: { "x-api-key": setting.ownerKey() },
          }).then(async (res) => ({ status: res.status, text: await res.text() })),
          call("POST", "servers/writeFile", { serverId: server.id, path: "swap.txt", content: "pwned" }),
        ]);
        assert.ok(read.status === 200 ? read.body.content === "inside" || read.body.content === "pwned" : refused(read)[1] === "outside_root", JSON.stringify(read));
        assert.ok(download.status === 200 ? ["inside", "pwned"].includes(download.text) : JSON.parse(download.text).reason === "outside_root", download.text);
        assert.ok([200, 400].includes(write.status), JSON.stringify(write));
        for (const outcome of [`read ${read.status}`, `download ${download.status}`, `write ${write.status}`]) outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
      }
    } finally {
      swapping = false;
      await swapper;
    }
    assert.equal(readFileSync(canary, "utf8"), "outside the server's directory", "never written through the link");
    assert.ok(swaps > 100, `${swaps} swaps`);
    assert.ok(outcomes.get("read 400"), `some reads met the link: ${JSON.stringify([...outcomes])}`);
  });

  it("keeps to what the operator allows: read-only refuses writes, off serves nothing, an offline agent is 409", async () => {
    const readOnly = await wrapped("Read only", { "server.properties": "a=b\n" }, ["--files", "read-only"]);
    assert.equal((await ok("GET", `servers/getServer?serverId=${readOnly.id}`)).server.files, "read_only");
    assert.equal((await ok("GET", `servers/readFile?serverId=${readOnly.id}&path=server.properties`)).content, "a=b\n");
    assert.deepEqual(refused(await call("POST", "servers/writeFile", { serverId: readOnly.id, path: "server.properties", content: "x" })), [403, "read_only"]);
    assert.equal(readFileSync(join(readOnly.root, "server.properties"), "utf8"), "a=b\n");

    const off = await wrapped("Off", { "server.properties": "a=b\n" }, ["--files", "off"]);
    assert.equal((await ok("GET", `servers/getServer?serverId=${off.id}`)).server.files, "off");
    assert.deepEqual(refused(await get("listFiles", { serverId: off.id, path: "" })), [409, "files_off"]);

    await off.agent.stop("SIGTERM");
    for (let i = 0; (await ok("GET", `servers/getServer?serverId=${off.id}`)).server.online; i++) {
      assert.ok(i < 100, "the server goes offline");
      await sleep(100);
    }
    assert.deepEqual(refused(await get("listFiles", { serverId: off.id, path: "" })), [409, "agent_offline"]);
  });

  it("a member's grant reaches the paths it names: browse down to them, edit there, 403 elsewhere", async () => {
    const server = await wrapped("Granted files", {
      "server.properties": "a=b\n",
      "plugins/Essentials/config.yml": "spawn: true\n",
      "plugins/Other/config.yml": "other\n",
      "plugins/Essentials.jar": "jar",
    });
    assert.deepEqual(refused(await get("readFile", { serverId: server.id, path: "plugins/Essentials/config.yml" }, member())), [403, "permission_denied"]);
    await grant(server.id, ["files_write"], ["plugins/Essentials/**"]);
    const names = async (path: string) => (await ok("GET", `servers/listFiles?serverId=${server.id}&path=${path}`, undefined, member())).entries.map((e: Json) => e.name);
    assert.deepEqual(await names(""), ["plugins"], "only the way to the granted folder");
    assert.deepEqual(await names("plugins"), ["Essentials"]);
    assert.deepEqual(await names("plugins/Essentials"), ["config.yml"]);
    const file = await ok("GET", `servers/readFile?serverId=${server.id}&path=plugins/Essentials/config.yml`, undefined, member());
    await ok(
      "POST",
      "servers/writeFile",
      { serverId: server.id, path: "plugins/Essentials/config.yml", content: "spawn: false\n", expectedSha256: file.sha256 },
      member(),
    );
    assert.equal(readFileSync(join(server.root, "plugins/Essentials/config.yml"), "utf8"), "spawn: false\n");

    for (const res of [
      await get("readFile", { serverId: server.id, path: "server.properties" }, member()),
      await get("readFile", { serverId: server.id, path: "plugins/Other/config.yml" }, member()),
      await get("listFiles", { serverId: server.id, path: "plugins/Other" }, member()),
      await call("POST", "servers/writeFile", { serverId: server.id, path: "server.properties", content: "x" }, member()),
      await call("POST", "servers/moveFile", { serverId: server.id, from: "plugins/Essentials/config.yml", to: "server.properties", overwrite: true }, member()),
      await call("POST", "servers/deleteFile", { serverId: server.id, path: "plugins", recursive: true }, member()),
    ]) {
      assert.deepEqual(refused(res), [403, "permission_denied"], JSON.stringify(res.body));
    }
    assert.equal(readFileSync(join(server.root, "server.properties"), "utf8"), "a=b\n");
    assert.ok(existsSync(join(server.root, "plugins/Other/config.yml")));

    // A symlink inside the granted folder leads elsewhere in the directory: not for this member.
    symlinkSync("../../server.properties", join(server.root, "plugins/Essentials/link.properties"));
    assert.deepEqual(refused(await get("readFile", { serverId: server.id, path: "plugins/Essentials/link.properties" }, member())), [403, "denied"]);
    const owners = await ok("GET", `servers/readFile?serverId=${server.id}&path=plugins/Essentials/link.properties`);
    assert.equal(owners.content, "a=b\n", "an owner reaches everything inside, through links too");
  });

  it("moves a folder for a member only when the grant reaches all it holds", async () => {
    const server = await wrapped("Jars", { "plugins/Old.jar": "jar", "plugins/Folder.jar/secret.yml": "inside" });
    await grant(server.id, ["files_write"], ["plugins/*.jar"]);
    await ok("POST", "servers/moveFile", { serverId: server.id, from: "plugins/Old.jar", to: "plugins/Old.jar.disabled.jar" }, member());
    assert.ok(existsSync(join(server.root, "plugins/Old.jar.disabled.jar")));
    const folder = await call("POST", "servers/moveFile", { serverId: server.id, from: "plugins/Folder.jar", to: "plugins/Moved.jar" }, member());
    assert.deepEqual(refused(folder), [409, "not_a_regular_file"]);
    assert.deepEqual(refused(await call("POST", "servers/deleteFile", { serverId: server.id, path: "plugins/Folder.jar", recursive: true }, member())), [
      403,
      "permission_denied",
    ]);
    assert.ok(existsSync(join(server.root, "plugins/Folder.jar/secret.yml")));
  });
});
