import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createFileHistory, type HistoryOptions } from "../../../../agent/files/history.ts";
import { createFileOperations } from "../../../../agent/files/operations.ts";
import { confinedSandbox, type SandboxOptions } from "../../../../agent/files/sandbox.ts";
import { refuses, useFilesFixture } from "./files-fixture.ts";

const sha256 = (text: string | Buffer) => createHash("sha256").update(text).digest("hex");

describe("agent files: the history of replaced and deleted files", () => {
  const files = useFilesFixture();
  let clock = 0;
  /** Operations over the fixture's root with a history whose clock moves a second a version. */
  const operations = async (history: Omit<HistoryOptions, "now"> = {}, sandbox: Omit<SandboxOptions, "root"> = {}) => {
    clock = 1_700_000_000_000;
    const served = await files.sandbox(sandbox);
    return createFileOperations(served, { history: createFileHistory(served.root, { ...history, now: () => (clock += 1000) }) });
  };
  const historyFolders = () => readdirSync(join(files.root, ".outpost", "history"));
  const contents = (path: string) => readFileSync(join(files.root, path), "utf8");

  it("keeps what a write replaces and what a deletion removes, newest first, each with its size, sha256 and time", async () => {
    files.put("server.properties", "motd=one\n");
    const ops = await operations();
    assert.deepEqual(await ops.history("server.properties"), [], "nothing kept yet");
    await ops.write("server.properties", Buffer.from("motd=two\n"));
    await ops.write("server.properties", Buffer.from("motd=three\n"));
    const versions = await ops.history("server.properties");
    assert.deepEqual(
      versions.map((v) => [v.size, v.sha256, v.savedAt.getTime()]),
      [
        [9, sha256("motd=two\n"), 1_700_000_002_000],
        [9, sha256("motd=one\n"), 1_700_000_001_000],
      ],
    );
    assert.equal(versions[0].id, `1700000002000-9-${sha256("motd=two\n")}`);
    const [folder] = historyFolders();
    assert.deepEqual(JSON.parse(readFileSync(join(files.root, ".outpost/history", folder, "path.json"), "utf8")), { path: "server.properties" });

    await ops.remove("server.properties");
    assert.ok(!existsSync(join(files.root, "server.properties")));
    const afterDelete = await ops.history("server.properties");
    assert.deepEqual(afterDelete[0].sha256, sha256("motd=three\n"), "the deleted file is the newest version");
    assert.equal(afterDelete.length, 3);
  });

  it("restores a version atomically, keeping the current file in turn, and brings a deleted file back", async () => {
    files.put("config.yml", "a: 1\n");
    const ops = await operations();
    await ops.write("config.yml", Buffer.from("a: 2\n"));
    const [first] = await ops.history("config.yml");
    const written = await ops.restore("config.yml", first.id);
    assert.deepEqual([written.path, written.size, written.sha256], ["config.yml", 5, sha256("a: 1\n")]);
    assert.equal(contents("config.yml"), "a: 1\n");
    assert.deepEqual(
      (await ops.history("config.yml")).map((v) => v.sha256),
      [sha256("a: 2\n"), sha256("a: 1\n")],
      "the file restored over is kept; the version restored stays",
    );

    await refuses(ops.restore("config.yml", first.id, { expectedSha256: sha256("a: 2\n") }), "edit_conflict");
    assert.equal(contents("config.yml"), "a: 1\n", "nothing written over a file that changed");

    await ops.remove("config.yml");
    const [deleted] = await ops.history("config.yml");
    await ops.restore("config.yml", deleted.id);
    assert.equal(contents("config.yml"), "a: 1\n", "undone");
  });

  it("restores only a version it kept of that very path: other ids are not_found, never a path", async () => {
    files.put("a.txt", "a1");
    files.put("b.txt", "b1");
    const ops = await operations();
    await ops.write("a.txt", Buffer.from("a2"));
    await ops.write("b.txt", Buffer.from("b2"));
    const [ofB] = await ops.history("b.txt");
    await refuses(ops.restore("a.txt", ofB.id), "not_found");
    for (const id of ["..", ".", "path.json", "../../../outside/canary.txt", "1-2-3", `${ofB.id}/..`, "x".repeat(129)]) {
      await refuses(ops.restore("a.txt", id), "not_found");
    }
    assert.equal(contents("a.txt"), "a2");
    await refuses(ops.restore("missing.txt", ofB.id), "not_found");
  });

  it("keeps at most maxVersions of a file, dropping the oldest", async () => {
    files.put("f.txt", "v0");
    const ops = await operations({ maxVersions: 3 });
    for (let i = 1; i <= 5; i++) await ops.write("f.txt", Buffer.from(`v${i}`));
    assert.deepEqual(
      (await ops.history("f.txt")).map((v) => v.sha256),
      ["v4", "v3", "v2"].map(sha256),
    );
  });

  it("does not keep a file larger than maxFileBytes, and the write still happens", async () => {
    files.put("big.log", "x".repeat(101));
    files.put("small.log", "x".repeat(100));
    const ops = await operations({ maxFileBytes: 100 });
    await ops.write("big.log", Buffer.from("new"));
    await ops.write("small.log", Buffer.from("new"));
    assert.equal(contents("big.log"), "new");
    assert.deepEqual(await ops.history("big.log"), []);
    assert.equal((await ops.history("small.log")).length, 1);
  });

  it("keeps at most maxTotalBytes of all versions together, dropping the oldest whichever file they are of", async () => {
    for (const name of ["a", "b", "c"]) files.put(`${name}.txt`, name.repeat(40));
    const ops = await operations({ maxTotalBytes: 100 });
    await ops.write("a.txt", Buffer.from("new"));
    await ops.write("b.txt", Buffer.from("new"));
    assert.equal(historyFolders().length, 2);
    await ops.write("c.txt", Buffer.from("new"));
    assert.deepEqual(await ops.history("a.txt"), [], "the oldest, a's, dropped: 120 bytes were too many");
    assert.equal((await ops.history("b.txt")).length, 1);
    assert.equal((await ops.history("c.txt")).length, 1);
    assert.equal(historyFolders().length, 2, "a's folder went with its last version");
  });

  it("keeps the same bytes once: a version kept again moves up to now", async () => {
    files.put("t.txt", "same");
    const ops = await operations();
    await ops.write("t.txt", Buffer.from("other"));
    await ops.write("t.txt", Buffer.from("same"));
    await ops.write("t.txt", Buffer.from("other"));
    const versions = await ops.history("t.txt");
    assert.deepEqual(
      versions.map((v) => [v.sha256, v.savedAt.getTime()]),
      [
        [sha256("same"), 1_700_000_003_000],
        [sha256("other"), 1_700_000_002_000],
      ],
    );
  });

  it("keeps what a move with overwrite replaces; keeps nothing of folders, symlinks or new files", async () => {
    files.put("a.txt", "a");
    files.put("b.txt", "b");
    files.put("folder/inner.txt", "inner");
    files.put("target.txt", "target");
    symlinkSync("target.txt", join(files.root, "link.txt"));
    const ops = await operations();
    await ops.move("a.txt", "b.txt", { overwrite: true });
    assert.deepEqual(
      (await ops.history("b.txt")).map((v) => v.sha256),
      [sha256("b")],
    );
    await ops.write("new.txt", Buffer.from("fresh"));
    assert.deepEqual(await ops.history("new.txt"), []);
    await ops.remove("folder", { recursive: true });
    assert.deepEqual(await ops.history("folder/inner.txt").catch(() => []), []);
    await ops.remove("link.txt");
    assert.deepEqual(await ops.history("target.txt"), [], "a deleted link loses no bytes");
    assert.equal(contents("target.txt"), "target");
  });

  it("keys a file by where it really is: a write through a symlink is in its target's history", async () => {
    files.put("plugins/real.yml", "one");
    symlinkSync("plugins/real.yml", join(files.root, "alias.yml"));
    const ops = await operations();
    await ops.write("alias.yml", Buffer.from("two"));
    assert.deepEqual(
      (await ops.history("plugins/real.yml")).map((v) => v.sha256),
      [sha256("one")],
    );
    assert.deepEqual(
      (await ops.history("alias.yml")).map((v) => v.sha256),
      [sha256("one")],
    );
    const confined = createFileOperations(confinedSandbox(await files.sandbox()));
    await refuses(confined.history("alias.yml"), "denied");
  });

  it("refuses to restore where the operator allows reading only, or the deny list hides the path", async () => {
    files.put("server.properties", "a");
    files.put("secrets/key.txt", "k");
    await (await operations()).write("server.properties", Buffer.from("b"));
    const readOnly = await operations({}, { mode: "read-only" });
    const [version] = await readOnly.history("server.properties");
    await refuses(readOnly.restore("server.properties", version.id), "read_only");
    const denied = await operations({}, { deny: ["secrets/**"] });
    await refuses(denied.history("secrets/key.txt"), "not_found");
    await refuses(denied.restore("secrets/key.txt", version.id), "denied");
  });

  it("fails a change whose version cannot be kept, and changes nothing: .outpost a symlink or a file", async () => {
    files.put("server.properties", "a");
    symlinkSync(files.outside, join(files.root, ".outpost"));
    const ops = await operations();
    await assert.rejects(ops.write("server.properties", Buffer.from("b")), /not a folder/);
    await assert.rejects(ops.remove("server.properties"), /not a folder/);
    assert.equal(contents("server.properties"), "a");
    assert.deepEqual(readdirSync(files.outside), ["canary.txt"], "nothing made through the link");
    rmSync(join(files.root, ".outpost"));
    writeFileSync(join(files.root, ".outpost"), "a file");
    await assert.rejects(ops.write("server.properties", Buffer.from("b")), /not a folder/);
    assert.deepEqual(readdirSync(files.root).sort(), [".outpost", "server.properties"], "no temporary file left");
  });

  it("refuses to restore a damaged version", async () => {
    files.put("f.txt", "one");
    const ops = await operations();
    await ops.write("f.txt", Buffer.from("two"));
    const [version] = await ops.history("f.txt");
    writeFileSync(join(files.root, ".outpost/history", historyFolders()[0], version.id), "tampered");
    await assert.rejects(ops.restore("f.txt", version.id), /damaged/);
    assert.equal(contents("f.txt"), "two");
  });

  it("keeps every version whole when changes come at once", async () => {
    files.put("f.txt", "start");
    const ops = await operations({ maxVersions: 5 });
    await Promise.all(Array.from({ length: 12 }, (_, i) => ops.write("f.txt", Buffer.from(`content ${i}`))));
    const versions = await ops.history("f.txt");
    assert.equal(versions.length, 5);
    const folder = join(files.root, ".outpost/history", historyFolders()[0]);
    for (const version of versions) assert.equal(sha256(readFileSync(join(folder, version.id))), version.sha256);
    assert.deepEqual(
      readdirSync(folder).filter((name) => name.startsWith(".tmp-")),
      [],
    );
  });

  describe(".outpost is out of every client's reach, whatever the deny list", () => {
    for (const deny of [[], ["secrets/**"]]) {
      it(`lists, reads, writes, moves, deletes, searches and restores nothing there (deny list: ${JSON.stringify(deny)})`, async () => {
        files.put("server.properties", "needle one");
        const ops = await operations({}, { deny });
        await ops.write("server.properties", Buffer.from("needle two"));
        const [folder] = historyFolders();
        const kept = `.outpost/history/${folder}/path.json`;
        mkdirSync(join(files.root, "sub"));
        symlinkSync("../.outpost", join(files.root, "sub", "into"));

        assert.ok(!(await ops.list("")).entries.some((e) => e.name.toLowerCase() === ".outpost"), "not listed");
        for (const path of [".outpost", ".outpost/history", `.outpost/history/${folder}`, ".OUTPOST", "sub/into"]) {
          await refuses(ops.list(path), "not_found");
          await refuses(ops.search(path, "needle"), "not_found");
        }
        for (const path of [kept, ".Outpost/history", "sub/into/history"]) await refuses(ops.read(path), "not_found");
        await refuses(ops.history(kept), "not_found");
        for (const path of [".outpost", kept, ".outpost/new.txt", ".OutPost/x"]) {
          await refuses(ops.write(path, Buffer.from("x")), "denied");
          await refuses(ops.remove(path, { recursive: true }), "denied");
          await refuses(ops.move("server.properties", path, { overwrite: true }), "denied");
          await refuses(ops.restore(path, "1-1-" + "0".repeat(64)), "denied");
        }
        await refuses(ops.write("sub/into/history/x", Buffer.from("x")), "denied");
        await refuses(ops.createDirectory(".outpost/new"), "denied");
        await refuses(ops.move(kept, "stolen.json"), "denied");
        await refuses(ops.move(".outpost", "elsewhere"), "denied");
        const found = await ops.search("", "needle");
        assert.deepEqual(
          found.matches.map((m) => m.path),
          ["server.properties"],
          "the kept version's text is not searched",
        );
        assert.equal((await ops.history("server.properties")).length, 1, "the history is as it was");
        assert.ok(existsSync(join(files.root, kept)));
      });
    }
  });
});
