import assert from "node:assert/strict";
import { startTestOutpost, type TestOutpost } from "../support/outpost.ts";

const getSession = "/api/rpc/outpost.auth.v1.AuthService/GetSession";
const createApiKey = "/api/rpc/outpost.auth.v1.AuthService/CreateApiKey";
const json = { "content-type": "application/json" };
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const body = (res: Response): Promise<any> => res.json();

describe("edge: account endpoints, the session cookie and cross-site protection", () => {
  let t: TestOutpost;
  let cookie: string;
  const origin = "http://localhost:3000";

  before(async () => {
    t = await startTestOutpost();
  });
  after(async () => {
    await t?.close();
  });

  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(t.baseUrl + path, { method: "POST", headers: { ...json, ...headers }, body: JSON.stringify(body) });

  it("signs up and sets an HttpOnly, SameSite=Lax session cookie (not Secure on http)", async () => {
    const res = await post("/sign-up", { email: "cookie@example.com", password: "a long password", name: "C" }, { origin });
    assert.equal(res.status, 201);
    const [setCookie, deviceCookie, ...others] = res.headers.getSetCookie();
    assert.match(setCookie, /^outpost_session=ops_[0-9A-Za-z]{40}; Path=\/; Max-Age=\d+; HttpOnly; SameSite=Lax$/);
    assert.match(deviceCookie, /^outpost_device=opd_[\w.-]+; Path=\/; Max-Age=\d+; HttpOnly; SameSite=Lax$/);
    assert.deepEqual(others, []);
    assert.equal(res.headers.get("cache-control"), "no-store");
    const signedUp = await body(res);
    assert.equal(signedUp.user.email, "cookie@example.com");
    assert.equal(JSON.stringify(signedUp).includes("ops_"), false, "the token is not in the body");
    cookie = setCookie.split(";")[0];
  });

  it("sets the cookies' Max-Age from the database's clock, whatever the edge's own clock says", async () => {
    const realNow = Date.now;
    // The edge's clock an hour fast (core keeps the database's time).
    Date.now = () => realNow() + 3_600_000;
    let res: Response;
    try {
      res = await post("/sign-up", { email: "skewed-clock@example.com", password: "a long password", name: "S" }, { origin });
    } finally {
      Date.now = realNow;
    }
    assert.equal(res.status, 201);
    const [session, device] = res.headers.getSetCookie().map((c) => Number(/Max-Age=(\d+)/.exec(c)![1]));
    const ttl = 30 * 86_400;
    assert.ok(session <= ttl && session >= ttl - 5, `session Max-Age ${session}, the session lives ${ttl} s`);
    assert.ok(device >= 180 * 86_400 - 5 && device <= 180 * 86_400, `device Max-Age ${device}`);
  });

  it("authenticates /api/rpc with the cookie from our own origin", async () => {
    const res = await post(getSession, {}, { cookie, origin });
    assert.equal(res.status, 200);
    assert.equal((await body(res)).user.email, "cookie@example.com");
    const sameSite = await post(getSession, {}, { cookie, "sec-fetch-site": "same-origin" });
    assert.equal(sameSite.status, 200);
  });

  it("refuses a cross-site request carrying the cookie, and a cross-site sign-in", async () => {
    const forged = await post(createApiKey, { name: "stolen" }, { cookie, origin: "https://evil.example" });
    assert.equal(forged.status, 403);
    assert.equal((await body(forged)).code, "permission_denied");
    const crossSite = await post(createApiKey, { name: "stolen" }, { cookie, "sec-fetch-site": "cross-site", origin });
    assert.equal(crossSite.status, 403);
    const signIn = await post("/sign-in", { email: "cookie@example.com", password: "a long password" }, { origin: "https://evil.example" });
    assert.equal(signIn.status, 403);
    assert.equal(signIn.headers.get("set-cookie"), null);
  });

  it("lets an API key through from any origin (no cookie, nothing to forge)", async () => {
    const created = await post(createApiKey, { name: "script" }, { cookie, origin });
    const { key } = await body(created);
    const res = await post(getSession, {}, { "x-api-key": key, origin: "https://elsewhere.example" });
    assert.equal(res.status, 200);
  });

  it("answers 400 for a cookie and an API key at once", async () => {
    const { key } = await body(await post(createApiKey, { name: "second" }, { cookie, origin }));
    const res = await post(getSession, {}, { cookie, "x-api-key": key });
    assert.equal(res.status, 400);
    assert.equal((await body(res)).code, "invalid_argument");
  });

  it("gives one JSON answer for a wrong password or an unknown email, without a cookie", async () => {
    const wrong = await post("/sign-in", { email: "cookie@example.com", password: "wrong password" });
    const unknown = await post("/sign-in", { email: "nobody@example.com", password: "wrong password" });
    assert.equal(wrong.status, 401);
    assert.equal(unknown.status, 401);
    assert.equal(wrong.headers.get("set-cookie"), null);
    const [a, b] = [await body(wrong), await body(unknown)];
    assert.deepEqual(a, b);
    assert.deepEqual(Object.keys(a).sort(), ["code", "message", "reason", "status"]);
  });

  it("refuses bodies that are not JSON or a form with 400, and oversized ones with 413", async () => {
    const text = await fetch(t.baseUrl + "/sign-in", { method: "POST", headers: { "content-type": "text/plain" }, body: "hi" });
    assert.equal(text.status, 400);
    const broken = await fetch(t.baseUrl + "/sign-in", { method: "POST", headers: json, body: "{not json" });
    assert.equal(broken.status, 400);
    const huge = await post("/sign-in", { email: "a@example.com", password: "x".repeat(20_000) });
    assert.equal(huge.status, 413);
    const wrongType = await post("/sign-in", { email: 42, password: "x" });
    assert.equal(wrongType.status, 400);
  });

  it("signs in with the sign-in page's form too: its form token required, then a redirect to the dashboard", async () => {
    const form = { email: "cookie@example.com", password: "a long password" };
    const forged = await fetch(t.baseUrl + "/sign-in", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", origin },
      body: new URLSearchParams(form),
      redirect: "manual",
    });
    assert.equal(forged.status, 403, "no form token: refused");
    assert.equal(forged.headers.getSetCookie().length, 0);

    const page = await fetch(t.baseUrl + "/sign-in");
    assert.equal(page.status, 200);
    const tokenCookie = page.headers.getSetCookie()[0].split(";")[0];
    const formToken = /name="form_token" value="([^"]+)"/.exec(await page.text())![1];
    const res = await fetch(t.baseUrl + "/sign-in", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", origin, cookie: tokenCookie },
      body: new URLSearchParams({ ...form, form_token: formToken }),
      redirect: "manual",
    });
    assert.equal(res.status, 303);
    assert.equal(res.headers.get("location"), "/app");
    assert.match(res.headers.get("set-cookie")!, /^outpost_session=ops_/);
  });

  it("signs out: clears the cookie and the session stops working", async () => {
    const res = await post("/sign-out", {}, { cookie, origin });
    assert.equal(res.status, 204);
    assert.match(res.headers.get("set-cookie")!, /^outpost_session=; Path=\/; Max-Age=0; HttpOnly; SameSite=Lax/);
    const after = await post(getSession, {}, { cookie, origin });
    assert.equal(after.status, 401);
  });

  it("echoes a sane request id, replaces an odd one, and answers unknown routes with JSON 404", async () => {
    const kept = await fetch(t.baseUrl + "/healthz", { headers: { "x-request-id": "trace-12345678" } });
    assert.equal(kept.headers.get("x-request-id"), "trace-12345678");
    const replaced = await fetch(t.baseUrl + "/healthz", { headers: { "x-request-id": "<script>" } });
    assert.match(replaced.headers.get("x-request-id")!, /^[0-9a-f-]{36}$/);
    const missing = await fetch(t.baseUrl + "/nowhere");
    assert.equal(missing.status, 404);
    assert.equal((await body(missing)).code, "not_found");
    assert.equal(missing.headers.get("x-frame-options"), "DENY");
    assert.equal(missing.headers.get("x-content-type-options"), "nosniff");
  });
});

describe("edge: cookies on an https dashboard", () => {
  let t: TestOutpost;
  before(async () => {
    t = await startTestOutpost({ ACCOUNT_BASE_URL: "https://outpost.example.com" });
  });
  after(async () => {
    await t?.close();
  });

  it("marks the session cookie Secure", async () => {
    const res = await fetch(t.baseUrl + "/sign-up", {
      method: "POST",
      headers: { ...json, origin: "https://outpost.example.com" },
      body: JSON.stringify({ email: "secure@example.com", password: "a long password", name: "" }),
    });
    assert.equal(res.status, 201);
    assert.match(res.headers.get("set-cookie")!, /; HttpOnly; SameSite=Lax; Secure$/);
  });
});
