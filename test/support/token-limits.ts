/**
 * Each issuer's token endpoint limits over real HTTP, one suite for both: requests per client
 * address (the deployment's RATE_LIMIT_PER_MINUTE), and failed client authentication counted
 * against the address's bad_credential_ip limit; both answer 429 in the OAuth error shape with
 * Retry-After. An issuer gives where its token endpoint is, how to register a client, and its
 * credentials' shapes.
 */
import assert from "node:assert/strict";
import { startTestOutpost, type TestOutpost } from "./outpost.ts";

export const redirectUri = "http://127.0.0.1:9/callback";

export interface TokenLimitsIssuer {
  /** The token endpoint of the Outpost `t`. */
  tokenUrl(t: TestOutpost): string;
  /** A confidential client allowed `redirectUri`. */
  register(t: TestOutpost): Promise<{ clientId: string; clientSecret: string }>;
  /** A code that names no sign-in. */
  badCode: string;
  /** The i-th wrong secret, in the issuer's secret shape. */
  wrongSecret(i: number): string;
  /** A client id and secret that match no client. */
  unknownClient: [string, string];
}

async function assertLimited(res: Response): Promise<void> {
  assert.equal(res.status, 429);
  assert.match(res.headers.get("retry-after") ?? "", /^[1-9]\d*$/);
  assert.equal(res.headers.get("cache-control"), "no-store");
  const body = (await res.json()) as { error: string; error_description: string };
  assert.equal(body.error, "temporarily_unavailable");
  assert.ok(body.error_description);
}

export function describeTokenLimits(name: string, issuer: TokenLimitsIssuer): void {
  const token = (t: TestOutpost, clientId: string, clientSecret: string) =>
    fetch(issuer.tokenUrl(t), {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ grant_type: "authorization_code", code: issuer.badCode, redirect_uri: redirectUri, client_id: clientId, client_secret: clientSecret }),
    });

  describe(`${name}: token endpoint limits per address`, function () {
    this.timeout(60_000);

    describe("requests per address", () => {
      let t: TestOutpost;
      let app: { clientId: string; clientSecret: string };
      before(async () => {
        t = await startTestOutpost({ RATE_LIMIT_PER_MINUTE: "40" });
        app = await issuer.register(t);
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
      let app: { clientId: string; clientSecret: string };
      before(async () => {
        t = await startTestOutpost();
        app = await issuer.register(t);
      });
      after(() => t?.close());

      it("counts invalid_client against the address's bad_credential_ip limit; a client known to authenticate keeps working", async () => {
        // The real client authenticates once (its code is bad: invalid_grant, but the client is known).
        assert.equal((await token(t, app.clientId, app.clientSecret)).status, 400);
        for (let i = 0; i < 60; i++) {
          const res = await token(t, app.clientId, issuer.wrongSecret(i));
          assert.equal(res.status, 401, `guess ${i + 1}`);
          assert.equal(((await res.json()) as { error: string }).error, "invalid_client");
        }
        await assertLimited(await token(t, app.clientId, issuer.wrongSecret(61)));
        await assertLimited(await token(t, ...issuer.unknownClient));
        const known = await token(t, app.clientId, app.clientSecret);
        assert.equal(known.status, 400);
        assert.equal(((await known.json()) as { error: string }).error, "invalid_grant");
      });
    });
  });
}
