import assert from "node:assert/strict";
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createFileOperations } from "../../../../agent/files/operations.ts";
import { confinedSandbox, type SandboxOptions } from "../../../../agent/files/sandbox.ts";
import { searchFiles, type SearchOptions } from "../../../../agent/files/search.ts";
import { refuses, useFilesFixture } from "./files-fixture.ts";

describe("agent files: search", () => {
  const files = useFilesFixture();
  const search = async (path: string, query: string, options: SearchOptions = {}, sandbox: Omit<SandboxOptions, "root"> = {}) =>
    searchFiles(await files.sandbox(sandbox), path, query, options);
  const found = (result: { matches: Array<{ path: string; lineNumber: number; line: string }> }) => result.matches.map((m) => `${m.path}:${m.lineNumber}:${m.line}`);

  it("answers each line holding the text, with its path and line number, in path order, ignoring case unless asked", async () => {
    files.put("server.properties", "motd=A Minecraft Server\r\nmax-players=20\r\n");
    files.put("plugins/Essentials/config.yml", "motd: welcome\nspawn: true\n# MOTD below\n");
    files.put("plugins/a.txt", "nothing here\n");
    const all = await search("", "motd");
    assert.deepEqual(found(all), [
      "plugins/Essentials/config.yml:1:motd: welcome",
      "plugins/Essentials/config.yml:3:# MOTD below",
      "server.properties:1:motd=A Minecraft Server",
    ]);
    assert.equal(all.truncated, false);
    assert.deepEqual(found(await search("", "MOTD", { caseSensitive: true })), ["plugins/Essentials/config.yml:3:# MOTD below"]);
    assert.deepEqual(found(await search("plugins", "motd")), ["plugins/Essentials/config.yml:1:motd: welcome", "plugins/Essentials/config.yml:3:# MOTD below"]);
    assert.deepEqual(found(await search("", "no such text")), []);
  });

  it("skips binary files (a NUL in the first 8 KiB) and files over 2 MiB; a NUL further in is text", async () => {
    writeFileSync(join(files.root, "level.dat"), Buffer.concat([Buffer.from("needle\n"), Buffer.from([0, 1, 2])]));
    writeFileSync(join(files.root, "late-nul.txt"), Buffer.concat([Buffer.from("needle\n"), Buffer.alloc(9000, 0x61), Buffer.from([0])]));
    files.put("big.log", "needle\n" + "x".repeat(2 * 1024 * 1024));
    files.put("exact.log", "needle\n".padEnd(2 * 1024 * 1024, "y"));
    assert.deepEqual(found(await search("", "needle")), ["exact.log:1:needle", "late-nul.txt:1:needle"]);
  });

  it("answers at most max_results lines (default 100, at most 1,000) and says there were more", async () => {
    files.put("many.txt", "hit\n".repeat(1500));
    const some = await search("", "hit", { maxResults: 10 });
    assert.deepEqual([some.matches.length, some.truncated], [10, true]);
    const byDefault = await search("", "hit");
    assert.deepEqual([byDefault.matches.length, byDefault.truncated], [100, true]);
    const capped = await search("", "hit", { maxResults: 5000 });
    assert.deepEqual([capped.matches.length, capped.truncated], [1000, true]);
    const exact = await search("", "hit", { maxResults: 1500 });
    assert.equal(exact.matches.length, 1000);
    files.put("many.txt", "hit\n".repeat(10));
    const all = await search("", "hit", { maxResults: 10 });
    assert.deepEqual([all.matches.length, all.truncated], [10, false], "exactly as many as asked is not more");
  });

  it("stops after maxTextBytes of text or maxEntries files and folders, and says it stopped", async () => {
    for (let i = 0; i < 10; i++) files.put(`f${i}.txt`, `needle ${i}\n`.padEnd(1000, "."));
    const byBytes = await search("", "needle", { maxTextBytes: 3500 });
    assert.deepEqual([byBytes.matches.length, byBytes.truncated], [3, true]);
    const byEntries = await search("", "needle", { maxEntries: 4 });
    assert.deepEqual([byEntries.matches.length, byEntries.truncated], [4, true]);
    const whole = await search("", "needle", { maxTextBytes: 10_000, maxEntries: 10 });
    assert.deepEqual([whole.matches.length, whole.truncated], [10, false]);
    const late = await search("", "needle", { maxMillis: -1 });
    assert.deepEqual([late.matches.length, late.truncated], [0, true]);
  });

  it("cuts a line to 500 characters, never within one", async () => {
    files.put("long.txt", "needle " + "é".repeat(600) + "\n" + "needle" + "😀".repeat(600) + "\n");
    const [first, second] = (await search("", "needle")).matches;
    assert.equal(first.line, "needle " + "é".repeat(493));
    assert.equal(Array.from(second.line).length, 500);
    assert.ok(second.line.endsWith("😀") && second.line.isWellFormed());
  });

  it("skips what the deny list hides, symlinks out of the directory, and walks a symlink loop once", async () => {
    files.put("secrets/token.txt", "needle secret");
    files.put("config/a.key", "needle key");
    files.put("config/ok.yml", "needle ok");
    files.put("plugins/p.yml", "needle plugin");
    symlinkSync(files.canary, join(files.root, "escape.txt"));
    symlinkSync(files.outside, join(files.root, "outside-dir"));
    symlinkSync("..", join(files.root, "plugins", "up"));
    const result = await search("", "needle", {}, { deny: ["secrets/**", "config/*.key"] });
    assert.deepEqual(found(result), ["config/ok.yml:1:needle ok", "plugins/p.yml:1:needle plugin"]);
    // The loop back to the root (plugins/up) is the root again: walked once.
    await refuses(search("secrets", "needle", {}, { deny: ["secrets/**"] }), "not_found");
  });

  it("follows no symlink for a confined caller, inside the directory either", async () => {
    files.put("plugins/p.yml", "needle");
    files.put("world/w.txt", "needle world");
    symlinkSync("../world/w.txt", join(files.root, "plugins", "alias.txt"));
    symlinkSync("../world", join(files.root, "plugins", "world-link"));
    const open = await search("plugins", "needle");
    assert.deepEqual(found(open), ["plugins/alias.txt:1:needle world", "plugins/p.yml:1:needle", "plugins/world-link/w.txt:1:needle world"]);
    const confined = await searchFiles(confinedSandbox(await files.sandbox()), "plugins", "needle");
    assert.deepEqual(found(confined), ["plugins/p.yml:1:needle"]);
  });

  it("refuses a path that is not a folder, or not there", async () => {
    files.put("a.txt", "x");
    mkdirSync(join(files.root, "empty"));
    await refuses(search("a.txt", "x"), "not_a_directory");
    await refuses(search("missing", "x"), "not_found");
    await refuses(search("../outside", "x"), "outside_root");
    assert.deepEqual(await search("empty", "x"), { matches: [], truncated: false });
  });

  it("is one of the file operations, with its bounds from the options", async () => {
    files.put("a.txt", "needle\nneedle\n");
    const operations = createFileOperations(await files.sandbox(), { search: { maxTextBytes: 3 } });
    assert.deepEqual(await operations.search("", "needle"), { matches: [], truncated: true });
    assert.equal((await operations.search("", "needle", { maxTextBytes: 100, maxResults: 1 })).matches.length, 1);
  });
});
