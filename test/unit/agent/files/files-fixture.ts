/**
 * A server's directory for the files suites, made fresh for each case under the system's temporary
 * folder: `root/` (what the sandbox serves) beside `outside/canary.txt`, which no case may read or
 * change (checked after every case), and removed afterwards.
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FileError, type FileErrorReason } from "../../../../agent/files/file-error.ts";
import { createFileSandbox, type SandboxOptions } from "../../../../agent/files/sandbox.ts";

export const canaryText = "the canary: never read, never changed";

export interface FilesFixture {
  /** The temporary folder holding `root/` and `outside/`. */
  base: string;
  root: string;
  outside: string;
  canary: string;
  /** Writes `text` at `relative` under the root, making its folders. */
  put(relative: string, text: string): void;
  sandbox(options?: Omit<SandboxOptions, "root">): ReturnType<typeof createFileSandbox>;
  /** Fails unless the canary is as it was made and was not read since (its atime untouched). */
  assertCanaryUntouched(): void;
}

/** Registers the suite's beforeEach/afterEach and returns the current case's directory. */
export function useFilesFixture(): FilesFixture {
  const fixture = {} as FilesFixture;
  let canaryAtime = 0;
  beforeEach(() => {
    const base = mkdtempSync(join(tmpdir(), "outpost-files-"));
    Object.assign(fixture, { base, root: join(base, "root"), outside: join(base, "outside"), canary: join(base, "outside", "canary.txt") });
    mkdirSync(fixture.root);
    mkdirSync(fixture.outside);
    writeFileSync(fixture.canary, canaryText);
    backdateCanary();
  });
  // Times two days back, so that a read moves the access time even under relatime.
  const backdateCanary = () => {
    const then = new Date(Date.now() - 48 * 3600 * 1000);
    utimesSync(fixture.canary, then, then);
    canaryAtime = statSync(fixture.canary).atimeMs;
  };
  // Every case ends by checking the canary, whatever it did.
  afterEach(() => {
    try {
      fixture.assertCanaryUntouched();
    } finally {
      rmSync(fixture.base, { recursive: true, force: true });
    }
  });
  fixture.put = (relative, text) => {
    mkdirSync(join(fixture.root, relative, ".."), { recursive: true });
    writeFileSync(join(fixture.root, relative), text);
  };
  fixture.sandbox = (options = {}) => createFileSandbox({ root: fixture.root, ...options });
  fixture.assertCanaryUntouched = () => {
    assert.equal(statSync(fixture.canary).atimeMs, canaryAtime, "the canary was read");
    assert.equal(readFileSync(fixture.canary, "utf8"), canaryText, "the canary was changed");
    backdateCanary();
  };
  return fixture;
}

/** Fails unless `promise` rejects with a FileError of `reason`; returns the error. */
export async function refuses(promise: Promise<unknown>, reason: FileErrorReason): Promise<FileError> {
  const error = await promise.then(
    () => assert.fail(`expected a refusal (${reason}), got success`),
    (error: unknown) => error,
  );
  assert.ok(error instanceof FileError, `expected a FileError (${reason}), got ${String(error)}`);
  assert.equal(error.reason, reason, error.message);
  return error;
}
