import assert from "node:assert/strict";
import { startTestOutpost, type TestOutpost } from "../support/outpost.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- JSON from the HTTP API, read field by field
type Json = any;

describe("http api: a failure inside says only that it failed", () => {
  let t: TestOutpost;
  before(async () => {
    t = await startTestOutpost();
  });
  after(async () => {
    await t?.close();
  });

  it("answers 500 with a request id and no detail when the database fails", async () => {
    const res = await fetch(`${t.baseUrl}/sign-up`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: "x@example.com", password: "a long password", name: "" }),
    });
    const cookie = res.headers.get("set-cookie")!.split(";")[0];
    const created = await fetch(`${t.baseUrl}/api/http/auth/createApiKey`, {
      method: "POST",
      headers: { "content-type": "application/json", cookie },
      body: JSON.stringify({ name: "k" }),
    });
    const key = ((await created.json()) as Json).key;
    // Break the schema under the running service: every credential lookup now fails in SQL.
    await t.outpost.runtime.orm.em.fork().getConnection().execute("drop table api_keys cascade");
    const failed = await fetch(`${t.baseUrl}/api/http/auth/getSession`, { headers: { "x-api-key": key, "x-request-id": "req-failure-1" } });
    assert.equal(failed.status, 500);
    const body = (await failed.json()) as Json;
    assert.deepEqual(Object.keys(body).sort(), ["code", "message", "requestId", "status"]);
    assert.equal(body.requestId, "req-failure-1");
    assert.equal(failed.headers.get("x-request-id"), "req-failure-1");
    assert.doesNotMatch(JSON.stringify(body), /orm|sql|pool|stack|at /i);
  });
});

describe("http api: rate limits", () => {
  let t: TestOutpost;
  before(async () => {
    t = await startTestOutpost({ RATE_LIMIT_PER_MINUTE: "5", SIGN_IN_ATTEMPTS_PER_15_MIN: "3" });
  });
  after(async () => {
    await t?.close();
  });

  async function keyFor(email: string): Promise<string> {
    const res = await fetch(`${t.baseUrl}/sign-up`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email, password: "a long password", name: "" }),
    });
    const cookie = res.headers.get("set-cookie")!.split(";")[0];
    const created = await fetch(`${t.baseUrl}/api/http/auth/createApiKey`, {
      method: "POST",
      headers: { "content-type": "application/json", cookie },
      body: JSON.stringify({ name: "k" }),
    });
    return ((await created.json()) as Json).key;
  }

  it("answers a burst over the limit with 429, Retry-After and RateLimit headers; another key is unaffected", async () => {
    const key = await keyFor("burst@example.com");
    const other = await keyFor("calm@example.com");
    const statuses: number[] = [];
    let limited: Response | undefined;
    for (let i = 0; i < 8; i++) {
      const res = await fetch(`${t.baseUrl}/api/http/auth/getSession`, { headers: { "x-api-key": key } });
      statuses.push(res.status);
      if (res.status === 429) limited = res;
    }
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 429, 429, 429]);
    const retryAfter = Number(limited!.headers.get("retry-after"));
    assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
    assert.equal(limited!.headers.get("ratelimit-policy"), '"default";q=5;w=60');
    assert.match(limited!.headers.get("ratelimit")!, /^"default";r=0;t=\d+$/);
    const body = (await limited!.json()) as Json;
    assert.equal(body.code, "resource_exhausted");
    assert.equal(body.status, 429);
    assert.equal(body.reason, "rate_limited");
    assert.equal((await fetch(`${t.baseUrl}/api/http/auth/getSession`, { headers: { "x-api-key": other } })).status, 200);
  });

  it("refuses sign-in after repeated failures with 429 and Retry-After, the same for an unknown email", async () => {
    const attempt = (email: string, password: string) =>
      fetch(`${t.baseUrl}/sign-in`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email, password }) });
    await fetch(`${t.baseUrl}/sign-up`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: "target@example.com", password: "the right password", name: "" }),
    });
    for (let i = 0; i < 3; i++) assert.equal((await attempt("target@example.com", "wrong password")).status, 401);
    const refused = await attempt("target@example.com", "the right password");
    assert.equal(refused.status, 429);
    assert.ok(Number(refused.headers.get("retry-after")) >= 1);
    for (let i = 0; i < 3; i++) await attempt("ghost@example.com", "wrong password");
    const ghost = await attempt("ghost@example.com", "wrong password");
    assert.equal(ghost.status, 429);
    assert.equal(((await ghost.json()) as Json).message, ((await refused.json()) as Json).message);
  });
});
