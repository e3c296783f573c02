import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { parseClientPath } from "../../../../agent/files/client-path.ts";
import { FileError } from "../../../../agent/files/file-error.ts";
import { createFileOperations, type FileOperations } from "../../../../agent/files/operations.ts";
import { useFilesFixture } from "./files-fixture.ts";
import { hostilePaths } from "../../../support/hostile-paths.ts";

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
