import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { parseClientPath } from "../../../../agent/files/client-path.ts";
import { FileError } from "../../../../agent/files/file-error.ts";
import { createFileOperations, type FileOperations } from "../../../../agent/files/operations.ts";
import { useFilesFixture } from "./files-fixture.ts";

/** `..` as it may be spelled: plain, percent-encoded (once, twice, mixed), look-alikes, padded. */
const parents = ["..", "%2e%2e", "%2E%2E", ".%2e", "%2e.", "%252e%252e", "\uff0e\uff0e", "\u2024\u2024", "\ufe52\ufe52", "\u2025", "..\u200b", ". .", "...", ".. "];

/** `/` as it may be spelled: backslashes, encoded, look-alikes, doubled. */
const separators = ["/", "\\", "%2f", "%2F", "%5c", "%252f", "\u2215", "\uff0f", "\u2044", "\u29f8", "\uff3c", "\u2216", "\ufe68", "//"];

/** Where the hostile paths lead: the canary beside the root. */
const tails = ["outside/canary.txt", "outside"];

function hostilePaths(canary: string): string[] {
  const paths = new Set<string>();
  for (const parent of parents) {
    for (const separator of separators) {
      for (const tail of tails) {
        const rest = tail.split("/").join(separator);
        paths.add(`${parent}${separator}${rest}`);
        paths.add(`plugins${separator}${parent}${separator}${parent}${separator}${rest}`);
      }
    }
  }
  for (const absolute of [canary, `/${canary}`, "/etc/passwd", "C:/Windows/win.ini", "c:\\boot.ini", "//server/share/x", "\\\\?\\C:\\x", "/", "~/../outside"]) {
    paths.add(absolute);
  }
  for (let code = 0; code < 0x20; code++) paths.add(`plugins/a${String.fromCharCode(code)}b`);
  for (const code of [0x7f, 0x85, 0x2028, 0x2029, 0x200e, 0x202e, 0xfeff, 0xd800]) paths.add(`logs/${String.fromCharCode(code)}latest.log`);
  paths.add("server.properties\u0000../../outside/canary.txt");
  paths.add(`${"a".repeat(256)}/x`);
  paths.add(`${"€".repeat(86)}`);
  paths.add(`${"a/".repeat(2049)}x`);
  paths.add("plugins//x");
  paths.add("./plugins");
  return [...paths];
}

/** Every operation on `path`, each of which must be refused; the reasons, in order. */
async function tryAll(operations: FileOperations, path: string): Promise<string[]> {
  const attempts = [
    () => operations.read(path),
    () => operations.list(path),
    () => operations.write(path, Buffer.from("pwned")),
    () => operations.createDirectory(path),
    () => operations.move(path, "moved"),
    () => operations.move("server.properties", path, { overwrite: true }),
    () => operations.remove(path, { recursive: true }),
  ];
  const reasons: string[] = [];
  for (const attempt of attempts) {
    const error = await attempt().then(
      () => assert.fail(`${JSON.stringify(path)} was accepted`),
      (error: unknown) => error,
    );
    assert.ok(error instanceof FileError, `${JSON.stringify(path)}: ${String(error)}`);
    reasons.push(error.reason);
  }
  return reasons;
}

describe("agent files: hostile paths", () => {
  const files = useFilesFixture();

  it("refuses each of at least 200 hostile paths, as text and in every operation, touching nothing outside the root", async () => {
    files.put("server.properties", "motd=hi\n");
    files.put("plugins/a.jar", "jar");
    const paths = hostilePaths(files.canary);
    assert.ok(paths.length >= 200, `only ${paths.length} paths`);
    const operations = createFileOperations(await files.sandbox());
    const before = { base: readdirSync(files.base).sort(), outside: readdirSync(files.outside).sort() };
    for (const path of paths) {
      assert.throws(() => parseClientPath(path), FileError, JSON.stringify(path));
      for (const reason of await tryAll(operations, path)) assert.ok(["invalid_path", "outside_root"].includes(reason), `${JSON.stringify(path)}: ${reason}`);
    }
    assert.deepEqual({ base: readdirSync(files.base).sort(), outside: readdirSync(files.outside).sort() }, before);
    assert.equal((await operations.read("server.properties")).content.toString(), "motd=hi\n");
    assert.deepEqual(readdirSync(files.root).sort(), ["plugins", "server.properties"]);
  });
});
