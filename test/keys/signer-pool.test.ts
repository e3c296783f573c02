import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { generateKeyPairSync, verify, type KeyObject } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { createSignerPool, type SignerPool } from "../../core/keys/signer-pool.ts";

const rsa = () => generateKeyPairSync("rsa", { modulusLength: 2048 });

function verifies(input: string, signature: string, publicKey: KeyObject): boolean {
  return verify("sha256", Buffer.from(input), publicKey, Buffer.from(signature, "base64url"));
}

describe("keys: the signer pool", () => {
  let pool: SignerPool;
  afterEach(() => pool?.close());

  it("signs on its threads with the key named, many at once", async () => {
    pool = createSignerPool(2);
    const a = rsa();
    const b = rsa();
    const inputs = Array.from({ length: 40 }, (_, i) => `header.payload-${i}`);
    const signatures = await Promise.all(inputs.map((input, i) => pool.sign(i % 2 ? "kid-b" : "kid-a", i % 2 ? b.privateKey : a.privateKey, input)));
    signatures.forEach((signature, i) => {
      assert.ok(verifies(inputs[i], signature, i % 2 ? b.publicKey : a.publicKey), `signature ${i}`);
      assert.ok(!verifies(inputs[i], signature, i % 2 ? a.publicKey : b.publicKey), `signature ${i} under the other key`);
    });
  });

  it("sends a key again once a thread has let it go, and never signs with the wrong one", async () => {
    pool = createSignerPool(1);
    const keys = Array.from({ length: 10 }, rsa); // more than a thread keeps
    for (let round = 0; round < 2; round++) {
      for (const [i, key] of keys.entries()) {
        const signature = await pool.sign(`kid-${i}`, key.privateKey, `round ${round} key ${i}`);
        assert.ok(verifies(`round ${round} key ${i}`, signature, key.publicKey), `round ${round} key ${i}`);
      }
    }
  });

  it("starts its threads again after close", async () => {
    pool = createSignerPool(1);
    const key = rsa();
    await pool.sign("kid", key.privateKey, "before");
    await pool.close();
    assert.ok(verifies("after", await pool.sign("kid", key.privateKey, "after"), key.publicKey));
  });

  it("fails the signatures a thread owed when it dies, and signs again after", async () => {
    pool = createSignerPool(1);
    const key = rsa();
    const owed = Array.from({ length: 200 }, (_, i) => pool.sign("kid", key.privateKey, `owed ${i}`));
    await pool.close(); // ends the thread under the signatures it owes
    const outcomes = await Promise.allSettled(owed);
    const failed = outcomes.filter((o) => o.status === "rejected");
    assert.ok(failed.length > 0, "some signatures were still owed");
    for (const f of failed) assert.match(String((f as PromiseRejectedResult).reason), /signing thread exited/);
    outcomes.forEach((o, i) => o.status === "fulfilled" && assert.ok(verifies(`owed ${i}`, o.value, key.publicKey)));
    assert.ok(verifies("y", await pool.sign("kid", key.privateKey, "y"), key.publicKey));
  });

  it("keeps a process up while a signature is owed, and lets it end once none is", async () => {
    const script = `
      import { generateKeyPairSync } from "node:crypto";
      import { createSignerPool } from ${JSON.stringify(new URL("../../core/keys/signer-pool.ts", import.meta.url).href)};
      const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
      createSignerPool(2).sign("kid", privateKey, "input").then((s) => console.log("signed " + s.length));
    `;
    // Unreferenced while owing, the process would end before printing; referenced after, it would not end.
    const dir = mkdtempSync(join(tmpdir(), "outpost-signer-"));
    const file = join(dir, "sign.mjs");
    writeFileSync(file, script);
    const { stdout } = await promisify(execFile)(process.execPath, [file], { timeout: 20_000 }).finally(() => rmSync(dir, { recursive: true }));
    assert.equal(stdout.trim(), "signed 342"); // 256 bytes, base64url
  });
});
