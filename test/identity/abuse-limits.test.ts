import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { constants, closeSync, mkdtempSync, openSync, rmSync } from "node:fs";
import { open } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { createClient } from "@connectrpc/connect";
import { IdentityService } from "../../gen/outpost/identity/v1/identity_service_pb.js";
import { startTestOutpost, type TestOutpost } from "../support/outpost.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a JSON body, read field by field as the test needs
type Json = Record<string, any>;
const password = "correct horse battery staple";

function post(t: TestOutpost, path: string, body: Json): Promise<Response> {
  return fetch(`${t.baseUrl}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
}

describe("identity: sign-up limit per client IP", () => {
  let t: TestOutpost;
  before(async () => {
    t = await startTestOutpost({ SIGN_UPS_PER_IP_PER_HOUR: "10" });
  });
  after(() => t?.close());

  it("answers the 11th sign-up from one address with 429 and Retry-After, and creates no account", async () => {
    for (let i = 0; i < 10; i++) {
      const res = await post(t, "/sign-up", { email: `signup-${i}@example.com`, password, name: "" });
      assert.equal(res.status, 201, await res.text());
    }
    const refused = await post(t, "/sign-up", { email: "eleventh@example.com", password, name: "" });
    assert.equal(refused.status, 429);
    const retryAfter = Number(refused.headers.get("retry-after"));
    assert.ok(retryAfter > 3500 && retryAfter <= 3600, `Retry-After ${retryAfter}`);
    assert.equal(refused.headers.get("ratelimit-policy"), '"sign_up_ip";q=10;w=3600');
    const body = (await refused.json()) as Json;
    assert.deepEqual([body.code, body.reason, body.message], ["resource_exhausted", "rate_limited", "too many sign-ups from your address; try again in 60 minutes"]);
    assert.equal(refused.headers.get("set-cookie"), null);
    const rows = await t.outpost.runtime.orm.em.fork().execute(`select count(*)::int as n from users where email = 'eleventh@example.com'`);
    assert.equal(rows[0].n, 0);
    // Signing in is not a sign-up: the address's accounts still get in.
    assert.equal((await post(t, "/sign-in", { email: "signup-0@example.com", password })).status, 200);
  });
});

/**
 * Occupies every thread of libuv's pool (where Argon2id runs) with the opening of a FIFO that no
 * one writes to, so that a password check, once started, cannot finish until `release`: the
 * cap's places stay taken for as long as the test needs, without any timing.
 */
function holdThreadPool(): { release(): Promise<void> } {
  const dir = mkdtempSync(join(tmpdir(), "outpost-pool-"));
  const fifos = Array.from({ length: Number(process.env.UV_THREADPOOL_SIZE) || 4 }, (_, i) => join(dir, `fifo-${i}`));
  execFileSync("mkfifo", fifos);
  const readers = fifos.map((fifo) => open(fifo, "r"));
  return {
    async release() {
      // Opening a FIFO read-write never blocks on Linux, and gives each blocked reader its writer.
      const writers = fifos.map((fifo) => openSync(fifo, constants.O_RDWR));
      for (const handle of await Promise.all(readers)) await handle.close();
      writers.forEach(closeSync);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function until(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 2000 && !condition(); i++) await sleep(5);
  assert.ok(condition(), `timed out waiting until ${what}`);
}

describe("identity: password hashing is capped process-wide", function () {
  this.timeout(60_000);
  let t: TestOutpost;
  before(async () => {
    t = await startTestOutpost({ PASSWORD_HASH_CONCURRENCY: "1", PASSWORD_HASH_QUEUE: "1" });
    const identity = createClient(IdentityService, t.outpost.runtime.core.transport());
    for (const name of ["first", "second", "third"]) await identity.createUser({ email: `${name}@example.com`, password, name });
  });
  after(() => t?.close());

  it("with one place and one waiting, refuses a third concurrent sign-in at once with 429; the first two succeed", async () => {
    const { passwords } = t.outpost.runtime;
    const pool = holdThreadPool();
    let first: Promise<Response> | undefined;
    let second: Promise<Response> | undefined;
    try {
      first = post(t, "/sign-in", { email: "first@example.com", password });
      await until(() => passwords.load().running === 1, "the first sign-in is checking its password");
      second = post(t, "/sign-in", { email: "second@example.com", password });
      await until(() => passwords.load().waiting === 1, "the second sign-in waits");
      const third = await post(t, "/sign-in", { email: "third@example.com", password });
      assert.equal(third.status, 429);
      assert.equal(third.headers.get("retry-after"), "1");
      const body = (await third.json()) as Json;
      assert.deepEqual([body.code, body.reason], ["resource_exhausted", "server_busy"]);
      assert.deepEqual(passwords.load(), { running: 1, waiting: 1 }, "the two are still under way");
    } finally {
      await pool.release();
    }
    for (const res of [await first!, await second!]) {
      assert.equal(res.status, 200, await res.clone().text());
      assert.match(res.headers.get("set-cookie") ?? "", /^outpost_session=/);
    }
    assert.deepEqual(passwords.load(), { running: 0, waiting: 0 });
    // The refused attempt was not a failure: it does not count towards the sign-in limits, and
    // the third person gets in now that the checks are done.
    assert.equal((await post(t, "/sign-in", { email: "third@example.com", password })).status, 200);
  });
});

/** Settles with `promise`, or rejects after `ms` naming `what` (a guard against a stuck call, not a timing check). */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} did not finish`)), ms)));
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

/**
 * One database connection (the embedded database's pool; DATABASE_POOL_SIZE=1 on a server) and
 * one hashing place, taken by a password hash that cannot finish: a sign-up or sign-in waiting
 * for its hash must hold no connection, or every other request waits for it.
 */
describe("identity: a password hash holds no database connection", function () {
  this.timeout(60_000);
  let t: TestOutpost;
  let cookie: string;
  before(async () => {
    t = await startTestOutpost({ PASSWORD_HASH_CONCURRENCY: "1", PASSWORD_HASH_QUEUE: "4", DATABASE_POOL_SIZE: "1" });
    const res = await post(t, "/sign-up", { email: "owner@example.com", password, name: "" });
    assert.equal(res.status, 201);
    cookie = res.headers.get("set-cookie")!.split(";")[0];
  });
  after(() => t?.close());

  const getSession = () =>
    fetch(`${t.baseUrl}/api/rpc/outpost.auth.v1.AuthService/GetSession`, { method: "POST", headers: { "content-type": "application/json", cookie }, body: "{}" });

  for (const [what, path, body] of [
    ["sign-up", "/sign-up", { email: "new@example.com", password, name: "" }],
    ["sign-in", "/sign-in", { email: "owner@example.com", password }],
  ] as const) {
    it(`other requests complete while a ${what} hashes and another waits for the hashing place`, async () => {
      const { passwords } = t.outpost.runtime;
      const pool = holdThreadPool();
      let hashing: Promise<Response> | undefined;
      let waiting: Promise<Response> | undefined;
      try {
        hashing = post(t, path, body);
        await until(() => passwords.load().running === 1, `the ${what} is hashing`);
        waiting = post(t, "/sign-up", { email: `waiting-${what}@example.com`, password, name: "" });
        await until(() => passwords.load().waiting === 1, "the second call waits for the hashing place");
        const session = await within(getSession(), 10_000, "GetSession");
        assert.equal(session.status, 200, await session.clone().text());
        assert.equal(((await session.json()) as Json).user.email, "owner@example.com");
        assert.deepEqual(passwords.load(), { running: 1, waiting: 1 }, "both are still under way");
      } finally {
        await pool.release();
      }
      assert.equal((await hashing!).status, path === "/sign-up" ? 201 : 200);
      assert.equal((await waiting!).status, 201);
    });
  }

  it("two sign-ups of one email at once: one account, the other is email_taken", async () => {
    const [a, b] = await Promise.all([0, 1].map(() => post(t, "/sign-up", { email: "twice@example.com", password, name: "" })));
    assert.deepEqual([a.status, b.status].sort(), [201, 409]);
    const refused = (await (a.status === 409 ? a : b).json()) as Json;
    assert.equal(refused.reason, "email_taken");
  });
});
