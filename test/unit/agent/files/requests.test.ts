import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import {
  FileRequestSchema,
  type FileFailureSchema,
  type FileRequest,
  type FileResult_ContentSchema,
  type FileResult_HistorySchema,
  type FileResult_ListingSchema,
  type FileResult_MatchesSchema,
  type FileResult_WrittenSchema,
} from "../../../../gen/outpost/agent/v1/agent_service_pb.js";
import { FileType, FilesMode } from "../../../../gen/outpost/servers/v1/resources_pb.js";
import type { FileOperationName } from "../../../../agent/options.ts";
import { createFileOperations, type FileOperationsOptions } from "../../../../agent/files/operations.ts";
import { answerFileRequest, createFileRequests, filesModeOnWire, openServedFiles, type FileResultInit, type ServedFiles } from "../../../../agent/files/requests.ts";
import { useFilesFixture } from "./files-fixture.ts";

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

/** A FileRequest as core sends it. */
const request = (operation: MessageInitShape<typeof FileRequestSchema>["operation"], requestId = "r1", timeoutMs = 30_000): FileRequest =>
  create(FileRequestSchema, { requestId, timeoutMs, operation });

/** What each kind of answer carries. */
interface ResultValues {
  failure: MessageInitShape<typeof FileFailureSchema>;
  listing: MessageInitShape<typeof FileResult_ListingSchema>;
  content: MessageInitShape<typeof FileResult_ContentSchema>;
  written: MessageInitShape<typeof FileResult_WrittenSchema>;
  history: MessageInitShape<typeof FileResult_HistorySchema>;
  matches: MessageInitShape<typeof FileResult_MatchesSchema>;
  done: object;
}

/** What an answer carries as `kind`, or a test failure naming what came instead. */
function resultAs<K extends keyof ResultValues>(answer: FileResultInit | undefined, kind: K): ResultValues[K] {
  const shown = JSON.stringify(answer?.result, (_, value) => (typeof value === "bigint" ? `${value}` : value));
  assert.equal(answer?.result?.case, kind, `expected ${kind}, got ${shown}`);
  return answer!.result!.value as ResultValues[K];
}

const failure = (answer: FileResultInit | undefined) => resultAs(answer, "failure") as { reason: string; message: string };

/** What the operator was told, by operation. */
function errorLog() {
  const heard: Array<{ error: Error; operation?: FileOperationName }> = [];
  return { heard, onError: (error: Error, operation?: FileOperationName) => void heard.push({ error, operation }) };
}

/**
 * A gate each write waits at inside the real write (its temporary file open): how many wait there
 * now, and the most that were ever inside a write at once.
 */
function writeGate() {
  const atGate: Array<() => void> = [];
  let inside = 0;
  let most = 0;
  const writeContent: FileOperationsOptions["writeContent"] = async (handle, content) => {
    most = Math.max(most, ++inside);
    await new Promise<void>((resolve) => atGate.push(resolve));
    await handle.writeFile(content);
    inside--;
  };
  return { writeContent, atGate: () => atGate.length, most: () => most, releaseOne: () => atGate.shift()!() };
}

describe("agent files: answering FileRequests", () => {
  const files = useFilesFixture();
  const served = async (options: FileOperationsOptions = {}): Promise<ServedFiles> => ({
    mode: "on",
    operations: createFileOperations(await files.sandbox(), options),
  });

  it("answers each operation with its result: a listing, a file's content, a write, and done", async () => {
    files.put("plugins/config.yml", "motd: hello\n");
    files.put("eula.txt", "eula=true\n");
    const on = await served();
    const log = errorLog();
    const answer = (operation: Parameters<typeof request>[0]) => answerFileRequest(on, request(operation), log.onError);

    const listed = await answer({ case: "list", value: { path: "" } });
    assert.equal(listed.requestId, "r1");
    const listing = resultAs(listed, "listing");
    assert.equal(listing.path, "");
    assert.equal(listing.nextCursor, "");
    assert.deepEqual(
      listing.entries?.map(({ name, type, size }) => [name, type, size]),
      [
        ["plugins", FileType.DIRECTORY, BigInt(statSync(join(files.root, "plugins")).size)],
        ["eula.txt", FileType.FILE, 10n],
      ],
    );
    const modified = listing.entries![1].modifiedAt as Timestamp;
    assert.equal(timestampDate(modified).getTime(), statSync(join(files.root, "eula.txt")).mtime.getTime());

    const content = resultAs(await answer({ case: "read", value: { path: "plugins/config.yml" } }), "content");
    assert.equal(content.path, "plugins/config.yml");
    assert.equal(Object.getPrototypeOf(content.content), Uint8Array.prototype, "bytes as the contract's Uint8Array, not a Buffer");
    assert.equal(Buffer.from(content.content!).toString(), "motd: hello\n");
    assert.equal(content.sha256, sha256("motd: hello\n"));
    assert.ok(content.modifiedAt);

    const written = resultAs(
      await answer({ case: "write", value: { path: "plugins/config.yml", content: Buffer.from("motd: hi\n"), expectedSha256: sha256("motd: hello\n") } }),
      "written",
    );
    assert.ok(written.modifiedAt);
    assert.deepEqual({ ...written, modifiedAt: undefined }, { path: "plugins/config.yml", size: 9n, sha256: sha256("motd: hi\n"), modifiedAt: undefined });
    assert.equal(readFileSync(join(files.root, "plugins/config.yml"), "utf8"), "motd: hi\n");

    const done = { requestId: "r1", result: { case: "done", value: {} } };
    assert.deepEqual(await answer({ case: "createDirectory", value: { path: "backups" } }), done);
    assert.ok(statSync(join(files.root, "backups")).isDirectory());
    assert.deepEqual(await answer({ case: "move", value: { from: "eula.txt", to: "backups/eula.txt", overwrite: false } }), done);
    assert.ok(existsSync(join(files.root, "backups/eula.txt")) && !existsSync(join(files.root, "eula.txt")));
    assert.deepEqual(await answer({ case: "delete", value: { path: "backups", recursive: true } }), done);
    assert.ok(!existsSync(join(files.root, "backups")));
    assert.deepEqual(log.heard, []);
  });

  it("answers a file's history, a restore and a search; plain and confined requests keep one history", async () => {
    files.put("plugins/config.yml", "motd: one\n");
    const log = errorLog();
    const on = await openServedFiles({ root: files.root }, log.onError);
    const answer = (operation: Parameters<typeof request>[0], confined = false) =>
      answerFileRequest(on, create(FileRequestSchema, { requestId: "r1", timeoutMs: 30_000, confined, operation }), log.onError);
    resultAs(await answer({ case: "write", value: { path: "plugins/config.yml", content: Buffer.from("motd: two\n") } }, true), "written");
    const history = resultAs(await answer({ case: "listHistory", value: { path: "plugins/config.yml" } }), "history");
    assert.equal(history.versions?.length, 1, "the confined write's version is in the one history");
    const [version] = history.versions!;
    assert.deepEqual([version.size, version.sha256], [10n, sha256("motd: one\n")]);
    assert.ok(version.savedAt && version.id);

    const restored = resultAs(await answer({ case: "restoreVersion", value: { path: "plugins/config.yml", versionId: version.id! } }), "written");
    assert.deepEqual([restored.path, restored.size, restored.sha256], ["plugins/config.yml", 10n, sha256("motd: one\n")]);
    assert.equal(readFileSync(join(files.root, "plugins/config.yml"), "utf8"), "motd: one\n");
    assert.equal(failure(await answer({ case: "restoreVersion", value: { path: "plugins/config.yml", versionId: ".." } })).reason, "not_found");

    const matches = resultAs(await answer({ case: "search", value: { path: "", query: "MOTD", maxResults: 0, caseSensitive: false } }), "matches");
    assert.deepEqual(matches, { matches: [{ path: "plugins/config.yml", lineNumber: 1, line: "motd: one" }], truncated: false });
    assert.deepEqual(log.heard, []);
  });

  it("pages a listing by the cursor it gave", async () => {
    for (const name of ["a", "b", "c"]) files.put(name, name);
    const on = await served({ pageSize: 2 });
    const first = resultAs(await answerFileRequest(on, request({ case: "list", value: { path: "" } }), () => {}), "listing");
    const cursor = first.nextCursor!;
    assert.ok(cursor);
    const second = resultAs(await answerFileRequest(on, request({ case: "list", value: { path: "", cursor } }), () => {}), "listing");
    assert.deepEqual(
      second.entries?.map((entry) => entry.name),
      ["c"],
    );
    assert.equal(second.nextCursor, "");
  });

  it("answers a refusal with its reason and message, within the contract's 1,024 characters", async () => {
    const on = await served();
    const log = errorLog();
    const missing = failure(await answerFileRequest(on, request({ case: "read", value: { path: "plugins/missing.yml" } }), log.onError));
    assert.equal(missing.reason, "not_found");
    assert.match(missing.message, /"plugins\/missing\.yml" does not exist/);
    assert.equal(failure(await answerFileRequest(on, request({ case: "list", value: { path: "../outside" } }), log.onError)).reason, "outside_root");
    assert.equal(failure(await answerFileRequest(on, request({ case: "list", value: { path: "", cursor: "nonsense" } }), log.onError)).reason, "invalid_cursor");
    const long = Array.from({ length: 15 }, (_, i) => `${i}`.padEnd(255, "x")).join("/");
    const bounded = failure(await answerFileRequest(on, request({ case: "read", value: { path: long } }), log.onError));
    assert.equal(bounded.reason, "not_found");
    assert.equal(Array.from(bounded.message).length, 1024);
    assert.deepEqual(log.heard, [], "a refusal is no error for the operator");
  });

  it("answers an unexpected error as failed, naming no path on the machine, and tells the operator the real error", async () => {
    files.put("ops.json", '["Steve"]');
    const on = await served({
      writeContent: async () => {
        throw Object.assign(new Error(`ENOSPC: no space left on device, write '${join(files.root, ".outpost-0000.tmp")}'`), { code: "ENOSPC" });
      },
    });
    const log = errorLog();
    const failed = failure(await answerFileRequest(on, request({ case: "write", value: { path: "ops.json", content: Buffer.from("[]") } }), log.onError));
    assert.equal(failed.reason, "failed");
    assert.equal(failed.message, "the write failed on the server's machine (ENOSPC); the agent's output there says why");
    assert.ok(!failed.message.includes(files.base));
    assert.equal(log.heard.length, 1);
    assert.equal(log.heard[0].operation, "write");
    assert.ok(log.heard[0].error.message.includes(files.root), "the operator sees where");
    assert.equal(readFileSync(join(files.root, "ops.json"), "utf8"), '["Steve"]');

    const unknown = failure(await answerFileRequest(on, request({ case: undefined }), log.onError));
    assert.deepEqual(unknown.reason, "failed");
    assert.match(unknown.message, /does not know the file operation/);
  });

  it("refuses every change in read-only mode, and everything with files off or no root, said as such in Hello", async () => {
    files.put("server.properties", "motd=A\n");
    const log = errorLog();
    const readOnly = await openServedFiles({ root: files.root, mode: "read-only" }, log.onError);
    assert.equal(filesModeOnWire(readOnly.mode), FilesMode.READ_ONLY);
    assert.equal(
      failure(await answerFileRequest(readOnly, request({ case: "write", value: { path: "server.properties", content: Buffer.from("motd=B\n") } }), log.onError)).reason,
      "read_only",
    );
    assert.equal(failure(await answerFileRequest(readOnly, request({ case: "delete", value: { path: "server.properties" } }), log.onError)).reason, "read_only");
    assert.equal(readFileSync(join(files.root, "server.properties"), "utf8"), "motd=A\n");
    assert.equal((await answerFileRequest(readOnly, request({ case: "read", value: { path: "server.properties" } }), log.onError)).result?.case, "content");

    for (const off of [await openServedFiles(undefined, log.onError), await openServedFiles({ root: files.root, mode: "off" }, log.onError)]) {
      assert.equal(filesModeOnWire(off.mode), FilesMode.OFF);
      assert.equal(failure(await answerFileRequest(off, request({ case: "list", value: { path: "" } }), log.onError)).reason, "files_off");
    }
    assert.equal(filesModeOnWire((await openServedFiles({ root: files.root }, log.onError)).mode), FilesMode.ON);
    assert.equal(log.heard.length, 0);

    const gone = await openServedFiles({ root: join(files.base, "no-such-directory") }, log.onError);
    assert.equal(gone.mode, "off");
    assert.equal(log.heard.length, 1);
    assert.match(log.heard[0].error.message, /files are off: the files root .*no-such-directory cannot be served/);
  });

  it("runs a few at once, queues a bounded number and answers the rest busy at once", async () => {
    const gate = writeGate();
    const requests = createFileRequests(await served({ writeContent: gate.writeContent }), () => {}, { running: 2, waiting: 3 });
    const write = (i: number) => requests.answer(request({ case: "write", value: { path: `f${i}.txt`, content: Buffer.from(`${i}`) } }, `w${i}`));
    const answers = [0, 1, 2, 3, 4].map(write);
    await waitFor(() => gate.atGate() === 2);
    const busy = failure(await write(5));
    assert.equal(busy.reason, "busy");
    assert.match(busy.message, /busy with other file operations/);
    for (let finished = 0; finished < 5; finished++) {
      await waitFor(() => gate.atGate() > 0);
      gate.releaseOne();
    }
    const results = await Promise.all(answers);
    assert.deepEqual(
      results.map((result) => [result?.requestId, result?.result?.case]),
      [0, 1, 2, 3, 4].map((i) => [`w${i}`, "written"]),
    );
    assert.equal(gate.most(), 2, "never more than two at once");
    for (const i of [0, 1, 2, 3, 4]) assert.equal(readFileSync(join(files.root, `f${i}.txt`), "utf8"), `${i}`);
    assert.ok(!existsSync(join(files.root, "f5.txt")));
  });

  it("does not run a request that waited longer than Outpost waits for it: its caller was told it timed out", async () => {
    const gate = writeGate();
    const requests = createFileRequests(await served({ writeContent: gate.writeContent }), () => {}, { running: 1, waiting: 1 });
    const running = requests.answer(request({ case: "write", value: { path: "slow.txt", content: Buffer.from("x") } }, "w1"));
    const late = requests.answer(request({ case: "createDirectory", value: { path: "late" } }, "w2", 20));
    await waitFor(() => gate.atGate() === 1);
    await new Promise((resolve) => setTimeout(resolve, 40));
    gate.releaseOne();
    assert.equal((await running)?.result?.case, "written");
    const busy = failure(await late);
    assert.equal(busy.reason, "busy");
    assert.match(busy.message, /longer than Outpost waits; nothing was done/);
    assert.ok(!existsSync(join(files.root, "late")));
    assert.equal(resultAs(await requests.answer(request({ case: "list", value: { path: "" } }, "w3")), "listing").entries?.length, 1, "its slot is free again");
  });

  it("drops waiting requests unrun when the connection ends, and answers nothing to an id the contract cannot carry", async () => {
    const gate = writeGate();
    const log = errorLog();
    const requests = createFileRequests(await served({ writeContent: gate.writeContent }), log.onError, { running: 1, waiting: 4 });
    const running = requests.answer(request({ case: "write", value: { path: "running.txt", content: Buffer.from("x") } }, "w1"));
    const waiting = requests.answer(request({ case: "createDirectory", value: { path: "waiting" } }, "w2"));
    await waitFor(() => gate.atGate() === 1);
    requests.close();
    assert.equal(await waiting, undefined);
    gate.releaseOne();
    assert.equal((await running)?.result?.case, "written", "what already ran is answered (the stream drops it if gone)");
    assert.ok(!existsSync(join(files.root, "waiting")), "what waited never ran");
    assert.equal(await requests.answer(request({ case: "list", value: { path: "" } }, "late")), undefined);

    const fresh = createFileRequests(await served(), log.onError);
    mkdirSync(join(files.root, "kept"));
    assert.equal(await fresh.answer(request({ case: "delete", value: { path: "kept" } }, "x".repeat(65))), undefined);
    assert.equal(await fresh.answer(request({ case: "delete", value: { path: "kept" } }, "")), undefined);
    assert.ok(existsSync(join(files.root, "kept")));
    assert.equal(log.heard.length, 2);
    assert.match(log.heard[0].error.message, /id is empty or longer than 64 characters/);
    assert.equal((await fresh.answer(request({ case: "list", value: { path: "" } }, "x".repeat(64))))?.result?.case, "listing");
  });
});

/** Polls `check` until it holds (a second at most). */
async function waitFor(check: () => boolean): Promise<void> {
  for (let i = 0; !check(); i++) {
    if (i > 200) assert.fail("the condition did not hold in time");
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
