/**
 * The Account OAuth token endpoint's limits over real HTTP, as the Game OAuth one's
 * (test/game-issuer/token-limits.test.ts): requests per client address (RATE_LIMIT_PER_MINUTE),
 * and failed client authentication counted against the address's bad_credential_ip limit; both
 * answer 429 in the OAuth error shape with Retry-After.
 */
import assert from "node:assert/strict";
import { startTestOutpost, type TestOutpost } from "../support/outpost.ts";
import { adminApiKey, registerApp, type RegisteredApp } from "../support/account-oauth.ts";

const redirectUri = "http://127.0.0.1:9/callback";

async function token(t: TestOutpost, clientId: string, clientSecret: string): Promise<Response> {
  return fetch(`${t.baseUrl}/api/auth/oauth2/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ grant_type: "authorization_code", code: "not-a-code", redirect_uri: redirectUri, client_id: clientId, client_secret: clientSecret }),
  });
}

async function assertLimited(res: Response): Promise<void> {
  assert.equal(res.status, 429);
  assert.match(res.headers.get("retry-after") ?? "", /^[1-9]\d*$/);
  assert.equal(res.headers.get("cache-control"), "no-store");
  const body = (await res.json()) as { error: string; error_description: string };
  assert.equal(body.error, "temporarily_unavailable");
  assert.ok(body.error_description);
}

describe("account issuer: token endpoint limits per address", function () {
  this.timeout(60_000);

  describe("requests per address", () => {
    let t: TestOutpost;
    let app: RegisteredApp;
    before(async () => {
      t = await startTestOutpost({ RATE_LIMIT_PER_MINUTE: "40" });
      app = await registerApp(t, await adminApiKey(t), [redirectUri]);
    });
    after(() => t?.close());

    it("answers 429 with Retry-After once an address passes RATE_LIMIT_PER_MINUTE token requests", async () => {
      for (let i = 0; i < 40; i++) {
        const res = await token(t, app.clientId, app.clientSecret);
        assert.equal(res.status, 400, `request ${i + 1}`);
        assert.equal(((await res.json()) as { error: string }).error, "invalid_grant");
      }
      await assertLimited(await token(t, app.clientId, app.clientSecret));
    });
  });

  describe("failed client authentication", () => {
    let t: TestOutpost;
    let app: RegisteredApp;
    before(async () => {
      t = await startTestOutpost();
      app = await registerApp(t, await adminApiKey(t), [redirectUri]);
    });
    after(() => t?.close());

    it("counts invalid_client against the address's bad_credential_ip limit; a client known to authenticate keeps working", async () => {
      assert.equal((await token(t, app.clientId, app.clientSecret)).status, 400);
      for (let i = 0; i < 60; i++) {
        const res = await token(t, app.clientId, `wrong-${i}`);
        assert.equal(res.status, 401, `guess ${i + 1}`);
        assert.equal(((await res.json()) as { error: string }).error, "invalid_client");
      }
      await assertLimited(await token(t, app.clientId, "wrong-61"));
      await assertLimited(await token(t, "unknown-client", "other"));
      const known = await token(t, app.clientId, app.clientSecret);
      assert.equal(known.status, 400);
      assert.equal(((await known.json()) as { error: string }).error, "invalid_grant");
    });
  });
});
