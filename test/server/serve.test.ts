import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Code, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { OrganizationsService } from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { AuthService } from "../../gen/outpost/auth/v1/auth_service_pb.js";
import { IdentityService } from "../../gen/outpost/identity/v1/identity_service_pb.js";
import { apiKeyHeader } from "../../contract/credentials.ts";
import { createTestDatabase, type TestDatabase } from "../support/database.ts";
import { migrations } from "../../core/db/migrations/index.ts";
import { runCli, startServe, type ServeProcess } from "../support/process.ts";
import { rejectsWith } from "../support/errors.ts";

/**
 * The operator's path, with the real processes: `outpost serve`, then `outpost user create` and
 * `outpost api-key create` beside it, and the key used over HTTP/1.1 and HTTP/2 at /api/rpc.
 * Runs on DATABASE_URL's server when set, else on the embedded database in a temporary DATA_DIR.
 */
describe("outpost serve and the operator CLI", function () {
  this.timeout(120_000);
  let dataDir: string;
  let database: TestDatabase | undefined;
  let env: Record<string, string | undefined>;
  let serve: ServeProcess | undefined;

  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "outpost-serve-"));
    if (process.env.DATABASE_URL) database = await createTestDatabase();
    env = { DATA_DIR: dataDir, DATABASE_URL: database?.url ?? "" };
    serve = await startServe(env);
  });

  after(async () => {
    await serve?.stop();
    await database?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const rpc = (httpVersion: "1.1" | "2", key?: string) =>
    createConnectTransport({
      baseUrl: `http://127.0.0.1:${serve!.port}/api/rpc`,
      httpVersion,
      interceptors: key ? [(next) => (req) => (req.header.set(apiKeyHeader, key), next(req))] : [],
    });

  it("is ready, and healthy", async () => {
    const ready = await fetch(`http://127.0.0.1:${serve!.port}/readyz`);
    assert.equal(ready.status, 200);
    const health = await fetch(`http://127.0.0.1:${serve!.port}/healthz`);
    assert.equal(health.status, 200);
  });

  let key: string;

  it("creates a user and an API key from the CLI; the key's line is the last one", async () => {
    const user = await runCli(["user", "create", "--email", "operator@example.com", "--password", "a long password", "--name", "Op"], env);
    assert.equal(user.code, 0, user.stderr);
    assert.match(user.stdout, /created user operator@example\.com/);
    const created = await runCli(["api-key", "create", "--email", "operator@example.com", "--name", "script", "--expires-in-days", "30"], env);
    assert.equal(created.code, 0, created.stderr);
    const lines = created.stdout.trim().split("\n");
    key = lines[lines.length - 1];
    assert.match(key, /^opk_[0-9A-Za-z]{40}$/);
  });

  it("user create reads the password from stdin when --password is absent, prints it nowhere, and it signs in", async () => {
    const password = "piped passphrase, not on any command line";
    const user = await runCli(["user", "create", "--email", "piped@example.com", "--name", "Pipe"], env, `${password}\n`);
    assert.equal(user.code, 0, user.stderr);
    assert.match(user.stdout, /created user piped@example\.com/);
    assert.ok(!user.stdout.includes(password) && !user.stderr.includes(password));
    const signIn = (body: unknown) =>
      fetch(`http://127.0.0.1:${serve!.port}/sign-in`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    // The line break that ended the piped line is not part of the password.
    assert.equal((await signIn({ email: "piped@example.com", password })).status, 200);
    assert.equal((await signIn({ email: "piped@example.com", password: `${password}\n` })).status, 401);
  });

  it("user create refuses an empty stdin or more than one line, saying how to give the password", async () => {
    const empty = await runCli(["user", "create", "--email", "empty@example.com"], env, "");
    assert.equal(empty.code, 2);
    assert.match(empty.stderr, /^error: a password is needed: type it when asked \(in a terminal\), or pipe it on stdin/);
    const twoLines = await runCli(["user", "create", "--email", "two@example.com"], env, "first line\nsecond line\n");
    assert.equal(twoLines.code, 1);
    assert.match(twoLines.stderr, /^error: stdin holds more than one line/);
  });

  it("the key authenticates Connect calls over HTTP/1.1 and HTTP/2", async () => {
    const h1 = createClient(OrganizationsService, rpc("1.1", key));
    await h1.createOrganization({ name: "Acme", slug: "acme" });
    const h2 = createClient(OrganizationsService, rpc("2", key));
    const { organizations } = await h2.listOrganizations({});
    assert.deepEqual(
      organizations.map((o) => o.slug),
      ["acme"],
    );
  });

  it("marks an address verified from the CLI, the way without SMTP; once, and only a known address", async () => {
    const auth = createClient(AuthService, rpc("1.1", key));
    assert.equal((await auth.getSession({})).user?.emailVerified, false);
    const first = await runCli(["user", "verify-email", "Operator@Example.com"], env);
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, /^verified operator@example\.com /);
    assert.equal((await auth.getSession({})).user?.emailVerified, true);
    const again = await runCli(["user", "verify-email", "operator@example.com"], env);
    assert.match(again.stdout, /operator@example\.com was verified already/);
    const unknown = await runCli(["user", "verify-email", "nobody@example.com"], env);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /^error: no account with the email nobody@example\.com\n$/);
    const bare = await runCli(["user", "verify-email"], env);
    assert.equal(bare.code, 2);
    assert.match(bare.stderr, /^error: user verify-email takes one email address/);
  });

  it("does not serve the edge-only identity service at /api/rpc", async () => {
    await rejectsWith(createClient(IdentityService, rpc("1.1")).signIn({ email: "operator@example.com", password: "a long password" }), Code.Unimplemented);
  });

  it("refuses a call without a key, and the key once revoked", async () => {
    await rejectsWith(createClient(OrganizationsService, rpc("1.1")).listOrganizations({}), Code.Unauthenticated);
    const auth = createClient(AuthService, rpc("1.1", key));
    const session = await auth.getSession({});
    await auth.revokeApiKey({ apiKeyId: session.credentialId });
    await rejectsWith(createClient(OrganizationsService, rpc("2", key)).listOrganizations({}), Code.Unauthenticated);
  });

  it("migrate says which migrations it applied, then that the database is up to date", async () => {
    const fresh = await createTestDatabase();
    try {
      const first = await runCli(["migrate"], { DATABASE_URL: fresh.url });
      assert.equal(first.code, 0, first.stderr);
      assert.equal(first.stdout.trim(), `applied ${migrations.map((m) => m.name).join(", ")}`);
      const again = await runCli(["migrate"], { DATABASE_URL: fresh.url });
      assert.equal(again.stdout.trim(), "the database is up to date");
    } finally {
      await fresh.drop();
    }
  });

  it("exits non-zero with one clear line on bad input", async () => {
    const missing = await runCli(["user", "create", "--email", "x@example.com", "--password", ""], env);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /^error: --password is required/);
    const invalid = await runCli(["user", "create", "--email", "not-an-email", "--password", "a long password"], env);
    assert.equal(invalid.code, 1);
    assert.match(invalid.stderr, /^error: .*email/);
    const unknown = await runCli(["api-key", "create", "--email", "nobody@example.com", "--name", "k"], env);
    assert.equal(unknown.code, 1);
    assert.equal(unknown.stderr.trim().split("\n").length, 1);
    const badConfig = await runCli(["migrate"], { ...env, PORT: "seventy" });
    assert.equal(badConfig.code, 1);
    assert.match(badConfig.stderr, /PORT must be a whole number/);
  });

  it("stops on SIGTERM, and keeps its data across a restart", async () => {
    assert.equal(await serve!.stop(), 0);
    serve = await startServe(env);
    const again = await runCli(["api-key", "create", "--email", "operator@example.com", "--name", "after restart"], env);
    assert.equal(again.code, 0, again.stderr);
    const newKey = again.stdout.trim().split("\n").pop()!;
    const { organizations } = await createClient(OrganizationsService, rpc("1.1", newKey)).listOrganizations({});
    assert.deepEqual(
      organizations.map((o) => o.slug),
      ["acme"],
    );
  });
});
