/**
 * The Game OAuth token endpoint's limits over real HTTP: requests per client address (the
 * deployment's RATE_LIMIT_PER_MINUTE), and failed client authentication counted against the
 * address's bad_credential_ip limit; both answer 429 in the OAuth error shape with Retry-After.
 */
import assert from "node:assert/strict";
import { startTestOutpost, type TestOutpost } from "../support/outpost.ts";
import { seedGameOAuth, type Seeded } from "../support/game-oauth.ts";

const redirectUri = "http://127.0.0.1:9/callback";

async function token(t: TestOutpost, clientId: string, clientSecret: string): Promise<Response> {
  return fetch(`${t.gameIssuerUrl}/oauth2/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ grant_type: "authorization_code", code: "gac_not-a-code", redirect_uri: redirectUri, client_id: clientId, client_secret: clientSecret }),
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

describe("game issuer: token endpoint limits per address", function () {
  this.timeout(60_000);

  describe("requests per address", () => {
    let t: TestOutpost;
    let seeded: Seeded;
    before(async () => {
      t = await startTestOutpost({ RATE_LIMIT_PER_MINUTE: "40" });
      seeded = await seedGameOAuth(t.baseUrl, [redirectUri]);
    });
    after(() => t?.close());

    it("answers 429 with Retry-After once an address passes RATE_LIMIT_PER_MINUTE token requests", async () => {
      for (let i = 0; i < 40; i++) {
        const res = await token(t, seeded.clientId, seeded.clientSecret);
        assert.equal(res.status, 400, `request ${i + 1}`);
        assert.equal(((await res.json()) as { error: string }).error, "invalid_grant");
      }
      await assertLimited(await token(t, seeded.clientId, seeded.clientSecret));
    });
  });

  describe("failed client authentication", () => {
    let t: TestOutpost;
    let seeded: Seeded;
    before(async () => {
      t = await startTestOutpost();
      seeded = await seedGameOAuth(t.baseUrl, [redirectUri]);
    });
    after(() => t?.close());

    it("counts invalid_client against the address's bad_credential_ip limit; a client known to authenticate keeps working", async () => {
      // The real client authenticates once (its code is bad: invalid_grant, but the client is known).
      assert.equal((await token(t, seeded.clientId, seeded.clientSecret)).status, 400);
      for (let i = 0; i < 60; i++) {
        const res = await token(t, seeded.clientId, `gcs_wrong-${i}`);
        assert.equal(res.status, 401, `guess ${i + 1}`);
        assert.equal(((await res.json()) as { error: string }).error, "invalid_client");
      }
      await assertLimited(await token(t, seeded.clientId, "gcs_wrong-61"));
      await assertLimited(await token(t, "gci_unknown", "gcs_other"));
      const known = await token(t, seeded.clientId, seeded.clientSecret);
      assert.equal(known.status, 400);
      assert.equal(((await known.json()) as { error: string }).error, "invalid_grant");
    });
  });
});
