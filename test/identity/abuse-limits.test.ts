import assert from "node:assert/strict";
import { startTestOutpost, type TestOutpost } from "../support/outpost.ts";

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
