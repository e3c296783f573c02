import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createFileOperations, type FileOperationsOptions } from "../../../../agent/files/operations.ts";
import { refuses, useFilesFixture } from "./files-fixture.ts";

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

describe("agent files: operations", () => {
  const files = useFilesFixture();
  const operations = async (options?: FileOperationsOptions) => createFileOperations(await files.sandbox(), options);

  it("lists a directory: folders first, then by name, with type, size and modifiedAt", async () => {
    files.put("b.txt", "bb");
    files.put("A.txt", "a");
    files.put("world/level.dat", "x");
    files.put("plugins/x.jar", "x");
    symlinkSync("b.txt", join(files.root, "link"));
    const page = await (await operations()).list("");
    assert.deepEqual(
      page.entries.map(({ name, type, size }) => [name, type, size]),
      [
        ["plugins", "directory", statSync(join(files.root, "plugins")).size],
        ["world", "directory", statSync(join(files.root, "world")).size],
        ["A.txt", "file", 1],
        ["b.txt", "file", 2],
        ["link", "symlink", 5],
      ],
    );
    assert.ok(page.entries.every((entry) => entry.modifiedAt instanceof Date));
    assert.equal(page.nextCursor, undefined);
    await refuses((await operations()).list("b.txt"), "not_a_directory");
    await refuses((await operations()).list("missing"), "not_found");
  });

  it("leaves out of a listing the entries no path could name (a line break, an invisible character, only dots)", async () => {
    files.put("ok.txt", "x");
    for (const name of ["line\nbreak.txt", "zero\u200bwidth.txt", "...", "esc\u001b.txt"]) files.put(name, "x");
    const page = await (await operations()).list("");
    assert.deepEqual(
      page.entries.map((entry) => entry.name),
      ["ok.txt"],
    );
  });

  it("pages past 1,000 entries by a cursor, each entry once", async () => {
    mkdirSync(join(files.root, "world"));
    for (let i = 0; i < 2500; i++) writeFileSync(join(files.root, "world", `r.${i}.mca`), "");
    for (let i = 0; i < 5; i++) mkdirSync(join(files.root, "world", `dim${i}`));
    const list = await operations();
    const seen: string[] = [];
    const sizes: number[] = [];
    let cursor: string | undefined;
    do {
      const page = await list.list("world", { cursor });
      sizes.push(page.entries.length);
      seen.push(...page.entries.map((entry) => entry.name));
      cursor = page.nextCursor;
    } while (cursor);
    assert.deepEqual(sizes, [1000, 1000, 505]);
    assert.equal(new Set(seen).size, 2505);
    assert.deepEqual(seen.slice(0, 5), ["dim0", "dim1", "dim2", "dim3", "dim4"]);
    await refuses(list.list("world", { cursor: "not-a-cursor" }), "invalid_cursor");
  });

  it("pages on from the last entry seen when entries come and go between pages", async () => {
    for (const name of ["a", "b", "c", "d", "e"]) files.put(name, name);
    const list = await operations({ pageSize: 2 });
    const first = await list.list("");
    assert.deepEqual(
      first.entries.map((entry) => entry.name),
      ["a", "b"],
    );
    files.put("aa", "new");
    const second = await list.list("", { cursor: first.nextCursor });
    assert.deepEqual(
      second.entries.map((entry) => entry.name),
      ["c", "d"],
    );
  });

  it("reads a file with its sha256 and modifiedAt, and refuses one over the limit as too_large", async () => {
    files.put("plugins/Essentials/config.yml", "motd: hello\n");
    const read = await (await operations({ readLimit: 16 })).read("plugins/Essentials/config.yml");
    assert.equal(read.content.toString(), "motd: hello\n");
    assert.equal(read.size, 12);
    assert.equal(read.sha256, sha256("motd: hello\n"));
    assert.equal(read.modifiedAt.getTime(), statSync(join(files.root, "plugins/Essentials/config.yml")).mtime.getTime());
    files.put("logs/latest.log", "x".repeat(17));
    await refuses((await operations({ readLimit: 16 })).read("logs/latest.log"), "too_large");
    await refuses((await operations()).read("plugins"), "not_a_regular_file");
    await refuses((await operations()).read("nothing.txt"), "not_found");
  });

  it("writes a new file and replaces one whole, keeping its permissions and leaving no temporary file", async () => {
    files.put("server.properties", "motd=old\n");
    chmodSync(join(files.root, "server.properties"), 0o600);
    const write = await operations();
    const result = await write.write("server.properties", Buffer.from("motd=new\n"));
    assert.deepEqual([result.path, result.size, result.sha256], ["server.properties", 9, sha256("motd=new\n")]);
    assert.equal(readFileSync(join(files.root, "server.properties"), "utf8"), "motd=new\n");
    assert.equal(statSync(join(files.root, "server.properties")).mode & 0o777, 0o600);
    await write.write("plugins-new.txt", Buffer.from("fresh"));
    assert.deepEqual(readdirSync(files.root).sort(), [".outpost", "plugins-new.txt", "server.properties"], "no temporary file; the old version in the history");
    await refuses(write.write("missing-dir/x.txt", Buffer.from("x")), "not_found");
    await refuses(write.write("", Buffer.from("x")), "not_a_regular_file");
  });

  it("leaves the old file whole when a write fails midway", async () => {
    files.put("ops.json", '["Steve"]');
    const failing = await operations({
      writeContent: async (handle, content) => {
        await handle.write(content.subarray(0, 3));
        throw Object.assign(new Error("no space left on device"), { code: "ENOSPC" });
      },
    });
    await assert.rejects(failing.write("ops.json", Buffer.from('["Steve","Mallory"]')), /no space left/);
    assert.equal(readFileSync(join(files.root, "ops.json"), "utf8"), '["Steve"]');
    assert.deepEqual(readdirSync(files.root), ["ops.json"]);
  });

  it("refuses a write whose expectedSha256 is not the file's any more, writing nothing", async () => {
    files.put("config.yml", "v1");
    const write = await operations();
    const read = await write.read("config.yml");
    files.put("config.yml", "v2 by someone else");
    const error = await refuses(write.write("config.yml", Buffer.from("v1 edited"), { expectedSha256: read.sha256 }), "edit_conflict");
    assert.match(error.message, /changed since it was read/);
    assert.equal(readFileSync(join(files.root, "config.yml"), "utf8"), "v2 by someone else");
    await refuses(write.write("gone.yml", Buffer.from("x"), { expectedSha256: read.sha256 }), "edit_conflict");
    const current = await write.read("config.yml");
    await write.write("config.yml", Buffer.from("v3"), { expectedSha256: current.sha256.toUpperCase() });
    assert.equal(readFileSync(join(files.root, "config.yml"), "utf8"), "v3");
  });

  it("creates a directory once, under an existing one", async () => {
    const make = await operations();
    await make.createDirectory("plugins");
    await make.createDirectory("plugins/Essentials/");
    assert.ok(statSync(join(files.root, "plugins/Essentials")).isDirectory());
    await refuses(make.createDirectory("plugins"), "already_exists");
    await refuses(make.createDirectory(""), "already_exists");
    await refuses(make.createDirectory("a/b"), "not_found");
  });

  it("moves a file or folder, refusing to overwrite unless asked", async () => {
    files.put("a.txt", "a");
    files.put("b.txt", "b");
    files.put("dir/x.txt", "x");
    const move = await operations();
    await refuses(move.move("a.txt", "b.txt"), "already_exists");
    await move.move("a.txt", "b.txt", { overwrite: true });
    assert.equal(readFileSync(join(files.root, "b.txt"), "utf8"), "a");
    await move.move("dir", "renamed");
    assert.equal(readFileSync(join(files.root, "renamed/x.txt"), "utf8"), "x");
    await refuses(move.move("renamed", "renamed/inside"), "invalid_path");
    await refuses(move.move("missing", "x"), "not_found");
    await refuses(move.move("b.txt", "nowhere/b.txt"), "not_found");
    await refuses(move.move("", "x"), "invalid_path");
    await refuses(move.move("renamed", "elsewhere", { filesOnly: true }), "not_a_regular_file");
    await move.move("b.txt", "c.txt", { filesOnly: true });
    assert.equal(readFileSync(join(files.root, "c.txt"), "utf8"), "a");
  });

  it("deletes a file, a symlink (not its target), and a folder only when empty or recursive", async () => {
    files.put("a.txt", "a");
    files.put("full/x.txt", "x");
    mkdirSync(join(files.root, "empty"));
    symlinkSync("full", join(files.root, "link"));
    const remove = await operations();
    await remove.remove("a.txt");
    await remove.remove("empty");
    await remove.remove("link");
    assert.ok(existsSync(join(files.root, "full/x.txt")));
    await refuses(remove.remove("full"), "directory_not_empty");
    await remove.remove("full", { recursive: true });
    assert.deepEqual(readdirSync(files.root), [".outpost"], "a.txt kept in the history");
    await refuses(remove.remove("a.txt"), "not_found");
    await refuses(remove.remove(""), "invalid_path");
  });
});
