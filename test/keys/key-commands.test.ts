/** The operator's key commands (outpost keys rotate) and where the key-encryption key comes from. */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { pino } from "pino";
import { keyEncryptionKey } from "../../core/keys/key-encryption.ts";
import { ConfigError } from "../../server/config.ts";
import { resolveKeyEncryptionKey } from "../../server/key-encryption-key.ts";
import { startTestCore, testKeyEncryptionKey, type TestCore } from "../support/core.ts";
import { runCli } from "../support/process.ts";

describe("outpost keys rotate", function () {
  let t: TestCore;
  before(async () => {
    t = await startTestCore();
    // Each issuer's keys exist once they are first used, as after a first sign-in.
    await t.deps.signingKeys.jwks("game");
    await t.deps.signingKeys.jwks("account");
  });
  after(() => t?.close());
  /** The kid in each stage of the algorithm's keys, from the database. */
  const stored = async (issuer: string, alg = "RS256") =>
    Object.fromEntries(
      (
        (await t.orm.em.fork().getConnection().execute(`select stage, kid from signing_keys where issuer = ? and alg = ? order by stage`, [issuer, alg])) as Array<{
          stage: string;
          kid: string;
        }>
      ).map((r) => [r.stage, r.kid]),
    );

  this.timeout(120_000);
  let dataDir: string;
  let env: Record<string, string>;

  before(() => {
    dataDir = mkdtempSync(join(tmpdir(), "outpost-keys-"));
    env = { DATABASE_URL: t.database.url, DATA_DIR: dataDir, KEY_ENCRYPTION_KEY: testKeyEncryptionKey.toString("base64") };
  });
  after(() => rmSync(dataDir, { recursive: true, force: true }));

  it("rotates an issuer's keys of each algorithm and prints the new stages' kids", async () => {
    const before = await stored("game");
    const res = await runCli(["keys", "rotate", "--issuer", "game"], env);
    assert.equal(res.code, 0, res.stderr);
    const after = await stored("game");
    assert.equal(after.previous, before.current);
    assert.equal(after.current, before.next);
    assert.ok(![before.current, before.next, before.previous].includes(after.next));
    const lines = [`rotated the game issuer's signing keys`];
    for (const alg of ["RS256", "ES256", "EdDSA"]) {
      const keys = await stored("game", alg);
      lines.push(`${alg} current ${keys.current}`, `${alg} next ${keys.next}`, `${alg} previous ${keys.previous}`);
    }
    assert.equal(res.stdout, `${lines.join("\n")}\n`);
  });

  it("--purge withdraws every key of the issuer and prints the withdrawn and new kids", async () => {
    const before = await stored("account");
    const beforeAll = await Promise.all(["ES256", "EdDSA"].map((alg) => stored("account", alg)));
    const res = await runCli(["keys", "rotate", "--issuer", "account", "--purge"], env);
    assert.equal(res.code, 0, res.stderr);
    const after = await stored("account");
    assert.deepEqual(Object.keys(after).sort(), ["current", "next"]);
    const withdrawn = Object.values(before);
    assert.ok(!withdrawn.includes(after.current) && !withdrawn.includes(after.next));
    const lines = res.stdout.trim().split("\n");
    assert.equal(lines[0], "purged the account issuer's signing keys; tokens they signed no longer verify");
    assert.deepEqual(new Set(lines[1].split(" ").slice(1)), new Set([...withdrawn, ...beforeAll.flatMap((keys) => Object.values(keys))]));
    assert.deepEqual(lines.slice(2, 4), [`RS256 current ${after.current}`, `RS256 next ${after.next}`]);
    assert.equal(lines.length, 2 + 3 * 2, "current and next of each algorithm");
  });

  it("refuses an unknown issuer, and a missing one, as usage mistakes", async () => {
    const res = await runCli(["keys", "rotate", "--issuer", "other"], env);
    assert.equal(res.code, 2);
    assert.equal(res.stderr.split("\n")[0], `error: --issuer must be game or account (got "other")`);
    const missing = await runCli(["keys", "rotate"], env);
    assert.equal(missing.code, 2);
    assert.equal(missing.stderr.split("\n")[0], "error: --issuer is required");
  });

  it("without KEY_ENCRYPTION_KEY generates one into DATA_DIR (0600), which does not open these keys: one line, exit 1", async () => {
    const res = await runCli(["keys", "rotate", "--issuer", "account"], { ...env, KEY_ENCRYPTION_KEY: "" });
    assert.equal(res.code, 1);
    assert.match(res.stderr, /^error: the account issuer's signing keys were encrypted with key-encryption key \S+, but KEY_ENCRYPTION_KEY is \S+; .*\n$/);
    const file = join(dataDir, "key-encryption-key");
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.equal(Buffer.from(readFileSync(file, "utf8").trim(), "base64").length, 32);
  });

  it("refuses a malformed KEY_ENCRYPTION_KEY without printing it", async () => {
    const res = await runCli(["keys", "rotate", "--issuer", "game"], { ...env, KEY_ENCRYPTION_KEY: "hunter2-is-not-a-key" });
    assert.equal(res.code, 1);
    assert.match(res.stderr, /^error: KEY_ENCRYPTION_KEY must be 32 random bytes in base64/);
    assert.ok(!res.stderr.includes("hunter2"));
  });
});

describe("the key-encryption key from DATA_DIR", () => {
  let dataDir: string;
  const logged: Array<{ level: number; msg: string }> = [];
  const lastLine = () => logged[logged.length - 1];
  const logger = pino(
    { level: "info" },
    new Writable({
      write(chunk, _encoding, done) {
        logged.push(JSON.parse(String(chunk)));
        done();
      },
    }),
  );

  beforeEach(() => {
    dataDir = join(mkdtempSync(join(tmpdir(), "outpost-kek-")), "data");
    logged.length = 0;
  });
  afterEach(() => rmSync(join(dataDir, ".."), { recursive: true, force: true }));

  it("is generated on first need, mode 0600, saying so and warning that several instances must set KEY_ENCRYPTION_KEY", () => {
    const kek = resolveKeyEncryptionKey({ keyEncryptionKey: undefined, dataDir, databaseUrl: undefined }, logger);
    const file = join(dataDir, "key-encryption-key");
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.deepEqual(kek.key, Buffer.from(readFileSync(file, "utf8"), "base64"));
    assert.match(logged[0].msg, /^generated a key-encryption key/);
    assert.match(logged[1].msg, /several instances must set KEY_ENCRYPTION_KEY/);
    assert.equal(logged[1].level, 40);
    // Read back, not replaced, afterwards; quiet on the embedded database, which one process serves.
    logged.length = 0;
    assert.equal(resolveKeyEncryptionKey({ keyEncryptionKey: undefined, dataDir, databaseUrl: undefined }, logger).id, kek.id);
    assert.deepEqual(logged, []);
    // On a PostgreSQL server, where several instances may run, every start warns.
    resolveKeyEncryptionKey({ keyEncryptionKey: undefined, dataDir, databaseUrl: "postgres://db/outpost" }, logger);
    assert.match(lastLine().msg, /several instances must set KEY_ENCRYPTION_KEY/);
  });

  it("is KEY_ENCRYPTION_KEY when set, with no file", () => {
    const key = randomBytes(32);
    assert.equal(resolveKeyEncryptionKey({ keyEncryptionKey: key, dataDir, databaseUrl: undefined }, logger).id, keyEncryptionKey(key).id);
    assert.throws(() => statSync(join(dataDir, "key-encryption-key")), { code: "ENOENT" });
  });

  it("refuses a damaged file rather than replace it", () => {
    resolveKeyEncryptionKey({ keyEncryptionKey: undefined, dataDir, databaseUrl: undefined }, logger);
    writeFileSync(join(dataDir, "key-encryption-key"), "short\n");
    assert.throws(
      () => resolveKeyEncryptionKey({ keyEncryptionKey: undefined, dataDir, databaseUrl: undefined }, logger),
      (error: unknown) => error instanceof ConfigError && /key-encryption-key must hold 32 bytes in base64; restore it, or set KEY_ENCRYPTION_KEY/.test(error.message),
    );
  });
});
