/**
 * `outpost keys rotate-kek` with the real command and a real database: after it, Outpost starts
 * with the new KEY_ENCRYPTION_KEY and signs with the same keys, refuses to start with the old one,
 * and a second run changes nothing. On DATABASE_URL's server when set, else on the embedded one.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { compactVerify, createLocalJWKSet } from "jose";
import { pino } from "pino";
import { loadConfig } from "../../server/config.ts";
import { openRuntime } from "../../server/runtime.ts";
import { keyEncryptionKeyFile } from "../../server/key-encryption-key.ts";
import { runCli, startServe, type ServeProcess } from "../support/process.ts";
import { createTestDatabase, type TestDatabase } from "../support/database.ts";

const newKey = () => randomBytes(32).toString("base64");

type Jwks = { keys: { kid: string }[] };

/** Both issuers' published keys (reading them makes each issuer's first keys). */
async function publishedKeys(serve: ServeProcess): Promise<{ game: Jwks; account: Jwks }> {
  const get = async (url: string) => {
    const res = await fetch(url);
    assert.equal(res.status, 200, url);
    return (await res.json()) as Jwks;
  };
  return {
    game: await get(`http://127.0.0.1:${serve.gamePort}/oauth2/jwks`),
    account: await get(`http://127.0.0.1:${serve.port}/api/auth/jwks`),
  };
}

/** Starts, reads the keys, stops. */
async function servedKeys(env: Record<string, string>) {
  const serve = await startServe(env);
  try {
    return await publishedKeys(serve);
  } finally {
    await serve.stop();
  }
}

/** What `outpost serve` says when it does not start. */
async function refusal(env: Record<string, string>): Promise<string> {
  const failed = await startServe(env).then(
    async (serve) => {
      await serve.stop();
      return undefined;
    },
    (error: Error) => error.message,
  );
  assert.ok(failed, "outpost serve started");
  return failed;
}

describe("keys: rotating KEY_ENCRYPTION_KEY", function () {
  this.timeout(120_000);
  let dir: string;
  let database: TestDatabase | undefined;
  let env: Record<string, string>;
  const oldKey = newKey();

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "outpost-kek-"));
    database = process.env.DATABASE_URL ? await createTestDatabase() : undefined;
    env = { DATABASE_URL: database?.url ?? "", DATA_DIR: dir, KEY_ENCRYPTION_KEY: oldKey, NEW_KEY_ENCRYPTION_KEY: "" };
  });
  afterEach(async () => {
    await database?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("re-encrypts every signing key: the service starts with the new key only, and signs with the same keys", async () => {
    const before = await servedKeys(env);
    const next = newKey();

    const rotated = await runCli(["keys", "rotate-kek"], { ...env, NEW_KEY_ENCRYPTION_KEY: next });
    assert.equal(rotated.code, 0, rotated.stderr);
    assert.match(rotated.stdout, /^re-encrypted 12 signing keys from key-encryption key \S+ to \S+$/m);
    assert.match(rotated.stdout, /start Outpost with KEY_ENCRYPTION_KEY set to the new key/);

    const again = await runCli(["keys", "rotate-kek"], { ...env, NEW_KEY_ENCRYPTION_KEY: next });
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /every signing key \(12\) is already under key-encryption key/);

    assert.match(await refusal(env), /encrypted with key-encryption key \S+, but KEY_ENCRYPTION_KEY is \S+/);

    const withNew = { ...env, KEY_ENCRYPTION_KEY: next };
    assert.deepEqual(await servedKeys(withNew), before, "the same keys are published");

    // The re-sealed private key opens under the new KEK and matches the published public key.
    const runtime = await openRuntime(loadConfig({ ...process.env, ...withNew }), pino({ level: "silent" }), "borrow");
    try {
      const token = await runtime.signingKeys.sign("game", { sub: "kek rotation" });
      const { payload } = await compactVerify(token, createLocalJWKSet(before.game as never));
      assert.equal(JSON.parse(new TextDecoder().decode(payload)).sub, "kek rotation");
      const events = await runtime.orm.em.fork().getConnection().execute("select actor_kind, details from activity_events where action = 'key_encryption_key.rotated'");
      assert.equal(events.length, 1, "one event, from the run that changed something");
      assert.equal(events[0].actor_kind, "system");
      assert.equal(events[0].details.resealed, "12");
    } finally {
      await runtime.close();
    }
  });

  it("changes nothing when a key is under neither the current nor the new KEK", async () => {
    await servedKeys(env);
    const stranger = await runCli(["keys", "rotate-kek"], { ...env, KEY_ENCRYPTION_KEY: newKey(), NEW_KEY_ENCRYPTION_KEY: newKey() });
    assert.equal(stranger.code, 1);
    assert.match(stranger.stderr, /^error: signing key \S+ is encrypted with key-encryption key \S+, which is neither the current one .* nothing was changed\n$/);
    await servedKeys(env); // still opens with the old key
  });

  it("refuses a missing, doubled or malformed new key with one clear line", async () => {
    const missing = await runCli(["keys", "rotate-kek"], env);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /^error: the new key is missing: pass --new-key-file PATH or set NEW_KEY_ENCRYPTION_KEY/);
    const file = join(dir, "new-key");
    writeFileSync(file, "not a key\n");
    const malformed = await runCli(["keys", "rotate-kek", "--new-key-file", file], env);
    assert.equal(malformed.code, 1);
    assert.match(malformed.stderr, /^error: --new-key-file \S+ must be 32 random bytes in base64/);
    assert.doesNotMatch(malformed.stderr, /not a key/, "a secret is not repeated");
    const doubled = await runCli(["keys", "rotate-kek", "--new-key-file", file], { ...env, NEW_KEY_ENCRYPTION_KEY: newKey() });
    assert.match(doubled.stderr, /^error: give the new key once/);
  });

  it("with the KEK kept in DATA_DIR, re-encrypts from it and writes the new key there", async function () {
    const embedded = { DATABASE_URL: "", DATA_DIR: dir, KEY_ENCRYPTION_KEY: "", NEW_KEY_ENCRYPTION_KEY: "" };
    const before = await servedKeys(embedded);
    const next = newKey();
    const file = join(dir, "new-key");
    writeFileSync(file, `${next}\n`, { mode: 0o600 });
    const rotated = await runCli(["keys", "rotate-kek", "--new-key-file", file], embedded);
    assert.equal(rotated.code, 0, rotated.stderr);
    assert.match(rotated.stdout, /^re-encrypted 12 signing keys/m);
    assert.match(rotated.stdout, /key-encryption-key now holds the new key/);
    assert.equal(readFileSync(join(dir, keyEncryptionKeyFile), "utf8").trim(), next);
    assert.deepEqual(await servedKeys(embedded), before);
  });
});
