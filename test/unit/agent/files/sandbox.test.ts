import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, readdirSync, renameSync, rmSync, symlinkSync, unlinkSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { parseClientPath } from "../../../../agent/files/client-path.ts";
import { createFileOperations } from "../../../../agent/files/operations.ts";
import { confinedSandbox } from "../../../../agent/files/sandbox.ts";
import { refuses, useFilesFixture } from "./files-fixture.ts";

describe("agent files: the sandbox", () => {
  const files = useFilesFixture();

  it("takes a relative /-separated path, the root as '' or '.', and one trailing slash", () => {
    assert.deepEqual(parseClientPath(""), { segments: [], relative: "" });
    assert.deepEqual(parseClientPath("."), { segments: [], relative: "" });
    assert.deepEqual(parseClientPath("plugins/Essentials/config.yml"), { segments: ["plugins", "Essentials", "config.yml"], relative: "plugins/Essentials/config.yml" });
    assert.deepEqual(parseClientPath("world/"), { segments: ["world"], relative: "world" });
    assert.deepEqual(parseClientPath("100% done.txt").relative, "100% done.txt");
    assert.deepEqual(parseClientPath("..hidden/a..b/.c").relative, "..hidden/a..b/.c");
  });

  const refusals: Array<[string, string, string]> = [
    ["'..'", "../outside/canary.txt", "outside_root"],
    ["'..' inside", "plugins/../../outside/canary.txt", "outside_root"],
    ["'..' percent-encoded", "%2e%2e/outside/canary.txt", "outside_root"],
    ["'..' encoded twice", "%252e%252e/outside", "outside_root"],
    ["an encoded slash", "a%2f..%2fb", "outside_root"],
    ["a backslash", "..\\outside\\canary.txt", "invalid_path"],
    ["full-width dots (U+FF0E)", "\uff0e\uff0e/outside/canary.txt", "invalid_path"],
    ["one dot leaders (U+2024)", "\u2024\u2024/outside/canary.txt", "invalid_path"],
    ["a division slash (U+2215)", "..\u2215outside", "invalid_path"],
    ["a full-width slash (U+FF0F)", "..\uff0foutside", "invalid_path"],
    ["an absolute path", "/etc/passwd", "outside_root"],
    ["a drive letter", "C:/Windows", "outside_root"],
    ["a UNC path", "//server/share", "outside_root"],
    ["NUL", "server.properties\u0000.txt", "invalid_path"],
    ["a control character", "logs/\u001b[2Jlatest.log", "invalid_path"],
    ["a bidi override", "plugins/\u202egpj.exe", "invalid_path"],
    ["an empty segment", "plugins//config.yml", "invalid_path"],
    ["a '.' segment", "plugins/./config.yml", "invalid_path"],
    ["a segment of dots", "plugins/.../config.yml", "invalid_path"],
    ["a segment over 255 bytes", `${"é".repeat(128)}.txt`, "invalid_path"],
    ["a path over 4096 bytes", "a/".repeat(2048) + "b", "invalid_path"],
  ];
  for (const [what, path, reason] of refusals) {
    it(`refuses ${what}`, async () => {
      const sandbox = await files.sandbox();
      await refuses(sandbox.locate(path, "read"), reason as "invalid_path");
      const error = await refuses(sandbox.locate(path, "write"), reason as "invalid_path");
      assert.match(error.message, /not a valid path|leads outside/);
    });
  }

  it("refuses everything when files are off, and writes when read-only", async () => {
    files.put("server.properties", "motd=hi\n");
    await refuses((await files.sandbox({ mode: "off" })).locate("server.properties", "read"), "files_off");
    const readOnly = createFileOperations(await files.sandbox({ mode: "read-only" }));
    assert.equal((await readOnly.read("server.properties")).content.toString(), "motd=hi\n");
    await refuses(readOnly.write("server.properties", Buffer.from("x")), "read_only");
    await refuses(readOnly.createDirectory("plugins"), "read_only");
    await refuses(readOnly.move("server.properties", "b"), "read_only");
    await refuses(readOnly.remove("server.properties"), "read_only");
  });

  it("follows a symlink that stays inside the root, and refuses one that leaves it", async () => {
    files.put("real/config.yml", "a: 1\n");
    symlinkSync("real/config.yml", join(files.root, "inside.yml"));
    symlinkSync(files.canary, join(files.root, "canary.txt"));
    symlinkSync(files.outside, join(files.root, "escape"));
    symlinkSync("../outside/canary.txt", join(files.root, "relative-escape"));
    const operations = createFileOperations(await files.sandbox());
    assert.equal((await operations.read("inside.yml")).content.toString(), "a: 1\n");
    for (const path of ["canary.txt", "escape/canary.txt", "relative-escape", "escape"]) {
      await refuses(operations.read(path), "outside_root");
      await refuses(operations.write(path, Buffer.from("x")), "outside_root");
    }
    await refuses(operations.list("escape"), "outside_root");
    await refuses(operations.remove("escape/canary.txt"), "outside_root");
  });

  it("confined (a caller whose grant names paths) follows no symlink, inside the root or not, at the end or on the way", async () => {
    files.put("plugins/Essentials/config.yml", "a: 1\n");
    files.put("server.properties", "rcon.password=secret\n");
    symlinkSync("../../server.properties", join(files.root, "plugins/Essentials/link.properties"));
    symlinkSync("Essentials", join(files.root, "plugins/Alias"));
    const confined = createFileOperations(confinedSandbox(await files.sandbox()));
    assert.equal((await confined.read("plugins/Essentials/config.yml")).content.toString(), "a: 1\n");
    await refuses(confined.read("plugins/Essentials/link.properties"), "denied");
    await refuses(confined.write("plugins/Essentials/link.properties", Buffer.from("x")), "denied");
    await refuses(confined.read("plugins/Alias/config.yml"), "denied");
    await refuses(confined.list("plugins/Alias"), "denied");
    const open = createFileOperations(await files.sandbox());
    assert.equal((await open.read("plugins/Alias/config.yml")).content.toString(), "a: 1\n", "unconfined, a link inside the root is followed");
  });

  it("refuses FIFOs, sockets and devices", async () => {
    execFileSync("mkfifo", [join(files.root, "pipe")]);
    symlinkSync("/dev/null", join(files.root, "null"));
    const server = createServer().listen(join(files.root, "socket"));
    await new Promise((resolve) => server.once("listening", resolve));
    try {
      const operations = createFileOperations(await files.sandbox());
      await refuses(operations.read("pipe"), "not_a_regular_file");
      await refuses(operations.write("pipe", Buffer.from("x")), "not_a_regular_file");
      await refuses(operations.read("socket"), "not_a_regular_file");
      await refuses(operations.read("null"), "outside_root");
      assert.deepEqual(
        (await operations.list("")).entries.map((entry) => entry.name),
        ["null"],
      );
    } finally {
      server.close();
    }
  });

  it("refuses a symlink swapped in for the file between the check and the open", async () => {
    files.put("config.yml", "mine\n");
    const swap = (absolute: string) => {
      unlinkSync(absolute);
      symlinkSync(files.canary, absolute);
    };
    const operations = createFileOperations(await files.sandbox({ beforeOpen: swap }));
    const error = await refuses(operations.read("config.yml"), "outside_root");
    assert.match(error.message, /changed while being opened/);
  });

  it("refuses a folder swapped for a symlink out of the root between the check and the open", async () => {
    files.put("plugins/canary.txt", "inside\n");
    let swapped = false;
    const swap = () => {
      if (swapped) return;
      swapped = true;
      renameSync(join(files.root, "plugins"), join(files.root, "plugins-moved"));
      symlinkSync(files.outside, join(files.root, "plugins"));
    };
    const operations = createFileOperations(await files.sandbox({ beforeOpen: swap }));
    await refuses(operations.read("plugins/canary.txt"), "outside_root");
    swapped = false;
    rmSync(join(files.root, "plugins"));
    renameSync(join(files.root, "plugins-moved"), join(files.root, "plugins"));
    await refuses(operations.write("plugins/canary.txt", Buffer.from("overwritten")), "outside_root");
    swapped = false;
    rmSync(join(files.root, "plugins"));
    renameSync(join(files.root, "plugins-moved"), join(files.root, "plugins"));
    await refuses(operations.list("plugins"), "outside_root");
  });

  it("hides the deny list's paths: not listed, not found when read, denied when written", async () => {
    files.put("secrets/token.txt", "s3cret");
    files.put("secrets/.env", "KEY=1");
    files.put("config/db.key", "k");
    files.put("config/app.yml", "a: 1");
    mkdirSync(join(files.root, "logs"));
    symlinkSync("secrets/token.txt", join(files.root, "token-link"));
    const operations = createFileOperations(await files.sandbox({ deny: ["secrets/**", "**/*.key"] }));
    assert.deepEqual(
      (await operations.list("")).entries.map((entry) => entry.name),
      ["config", "logs", "token-link"],
    );
    assert.deepEqual(
      (await operations.list("config")).entries.map((entry) => entry.name),
      ["app.yml"],
    );
    for (const path of ["secrets", "secrets/token.txt", "secrets/.env", "config/db.key", "token-link", "secrets/missing"]) {
      await refuses(operations.read(path), "not_found");
      await refuses(operations.write(path, Buffer.from("x")), "denied");
    }
    await refuses(operations.list("secrets"), "not_found");
    await refuses(operations.move("config/app.yml", "secrets/app.yml"), "denied");
    await refuses(operations.move("config", "elsewhere"), "denied");
    await refuses(operations.remove("config", { recursive: true }), "denied");
    await refuses(operations.remove("secrets", { recursive: true }), "denied");
    assert.equal((await operations.read("config/app.yml")).content.toString(), "a: 1");
  });

  it("hides what a symlink leads to when the deny list covers its real path", async () => {
    files.put("config/app.yml", "a: 1");
    files.put("config/db.key", "k");
    symlinkSync("config", join(files.root, "cfg"));
    symlinkSync("config/db.key", join(files.root, "db-link"));
    const operations = createFileOperations(await files.sandbox({ deny: ["config/*.key"] }));
    assert.deepEqual(
      (await operations.list("cfg")).entries.map((entry) => entry.name),
      ["app.yml"],
    );
    await refuses(operations.read("cfg/db.key"), "not_found");
    await refuses(operations.read("db-link"), "not_found");
    await refuses(operations.write("cfg/db.key", Buffer.from("x")), "denied");
    await refuses(operations.remove("cfg/db.key"), "denied");
    assert.equal((await operations.read("cfg/app.yml")).content.toString(), "a: 1");
    await operations.remove("cfg/", { recursive: true });
    assert.deepEqual(readdirSync(join(files.root, "config")).sort(), ["app.yml", "db.key"], "deleting the link leaves its target");
  });

  it("refuses a deny glob that could never match a client's path", async () => {
    await assert.rejects(files.sandbox({ deny: ["/etc/**"] }), /relative to the server's directory/);
    await assert.rejects(files.sandbox({ deny: ["secrets\\**"] }), /uses \//);
  });
});
