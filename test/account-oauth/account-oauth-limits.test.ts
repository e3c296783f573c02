/** Account OAuth's sign-in page and authorization starts under their rate limits, over real HTTP. */
import assert from "node:assert/strict";
import { startListeningOutpost, type TestOutpost } from "../support/outpost.ts";
import { hiddenField, FormBrowser } from "../support/account-oauth.ts";
import { password, redirectUri } from "./issuer-fixture.ts";

describe("Account OAuth sign-in page: rate limits", function () {
  this.timeout(60_000);
  let t: TestOutpost;
  before(async () => {
    t = await startListeningOutpost({ SIGN_IN_ATTEMPTS_PER_15_MIN: "3", RATE_LIMIT_PER_MINUTE: "5" });
    await new FormBrowser(t.baseUrl).signUp("limited@example.com", password, "Limited");
  });
  after(() => t?.close());

  it("refuses further attempts with 429, Retry-After and a clear message, the same for an unknown email", async () => {
    for (const email of ["limited@example.com", "ghost@example.com"]) {
      const browser = new FormBrowser(t.baseUrl);
      const attempt = async (pw: string) => {
        const page = await browser.request("/sign-in");
        const formToken = hiddenField(await page.text(), "form_token");
        return browser.request("/sign-in", { form: { form_token: formToken, email, password: pw } });
      };
      for (let i = 0; i < 3; i++) assert.equal((await attempt("wrong password")).status, 401, `${email} attempt ${i + 1}`);
      const refused = await attempt(email === "limited@example.com" ? password : "wrong password");
      assert.equal(refused.status, 429, email);
      const retryAfter = Number(refused.headers.get("retry-after"));
      assert.ok(retryAfter > 0, "Retry-After in seconds");
      const html = await refused.text();
      assert.match(html, new RegExp(`Too many sign-in attempts. Wait ${retryAfter} seconds`));
      assert.equal(
        refused.headers.getSetCookie().some((c) => c.startsWith("outpost_session=")),
        false,
        "even the right password is refused now",
      );
    }
  });

  it("a dashboard page over the session's limit is a 429 page with Retry-After", async () => {
    const browser = new FormBrowser(t.baseUrl);
    await browser.signUp("dashboard-limited@example.com", password, "Busy");
    let res: Response | undefined;
    for (let i = 0; i < 10 && res?.status !== 429; i++) res = await browser.request("/app/account/security");
    assert.equal(res!.status, 429, "the session's calls ran over RATE_LIMIT_PER_MINUTE=5");
    assert.ok(Number(res!.headers.get("retry-after")) > 0, "Retry-After in seconds");
    assert.match(res!.headers.get("ratelimit-policy")!, /^"default";q=5;w=60$/);
    assert.match(await res!.text(), /too many requests; try again in \d+ seconds?/);
  });

  it("limits authorization starts per address on both issuers: a 429 page with Retry-After", async () => {
    const params = new URLSearchParams({ response_type: "code", client_id: "oac_000000000000000000000000", redirect_uri: redirectUri, state: "s" });
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await fetch(`${t.baseUrl}/api/auth/oauth2/authorize?${params}`, { redirect: "manual" })).status);
    assert.deepEqual(statuses, [400, 400, 400, 400, 400, 429], "an unknown client is a 400 page, until the address is over its limit");
    const refused = await fetch(`${t.baseUrl}/api/auth/oauth2/authorize?${params}`, { redirect: "manual" });
    assert.equal(refused.status, 429);
    assert.ok(Number(refused.headers.get("retry-after")) > 0);
    assert.match(refused.headers.get("content-type")!, /text\/html/);
    assert.match(await refused.text(), /too many sign-ins started from your address/);
    const game = await fetch(`${t.gameIssuerUrl}/oauth2/authorize?${params}`, { redirect: "manual" });
    assert.equal(game.status, 429, "the game issuer counts the same address");
    assert.ok(Number(game.headers.get("retry-after")) > 0);
  });
});
