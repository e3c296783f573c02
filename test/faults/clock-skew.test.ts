/**
 * An instance whose machine clock runs 2 minutes ahead makes nothing valid longer: it keeps the
 * database's time, so the authorization codes it issues live 90 s, its access tokens 15 minutes and
 * its ID tokens 10, counted from now as PostgreSQL (and every other instance) tells it, and no ID
 * token says it was issued in the future.
 */
import assert from "node:assert/strict";
import { decodeJwt } from "jose";
import type { Outpost } from "../../server/compose.ts";
import { startTestOutpost, type TestOutpost } from "../support/outpost.ts";
import { adminApiKey } from "../support/account-oauth.ts";
import { firstPartyFlow } from "../support/first-party.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const aheadMs = 120_000;
const redirectUri = "http://127.0.0.1:9/callback";

describe("faults: an instance whose clock runs 2 minutes ahead", function () {
  this.timeout(60_000);
  let t: TestOutpost;
  let outpost: Outpost;
  let baseUrl: string;

  before(async () => {
    // This machine's clock, 2 minutes ahead of the database's.
    t = await startTestOutpost({}, { listening: true, clock: { now: () => new Date(Date.now() + aheadMs) } });
    ({ outpost, baseUrl } = t);
  });
  after(() => t?.close());

  /** Rows straight from the database, to read times by its clock. */
  const sql = (text: string) => outpost.runtime.orm.em.fork().execute<Json[]>(text);

  it("keeps the database's time: codes and tokens live as long as they should, from now", async () => {
    assert.ok(Math.abs(outpost.runtime.clock.offsetMs() + aheadMs) < 1_000, `the measured difference: ${outpost.runtime.clock.offsetMs()} ms`);

    const key = await adminApiKey(t);
    const created = await fetch(`${baseUrl}/api/http/admin/createAccountOAuthClient`, {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json" },
      body: JSON.stringify({ name: "Wiki", redirectUris: [redirectUri], skipConsent: true }),
    });
    const client = (await created.json()) as Json;
    assert.equal(created.status, 200, JSON.stringify(client));
    const flow = await firstPartyFlow(baseUrl, { ...client, redirectUri }, { email: "root@example.com", password: "a long admin password" });
    const minted = await flow.code();

    // The code: 90 s from the database's now, not 90 s from 2 minutes ahead.
    const [codeLife] = await sql(`select extract(epoch from expires_at - clock_timestamp())::float8 as s from account_authorization_codes`);
    assert.ok(codeLife.s > 80 && codeLife.s <= 90, `the code lives ${codeLife.s} s`);

    const exchanged = await flow.exchange(minted);
    const tokens = (await exchanged.json()) as Json;
    assert.equal(exchanged.status, 200, JSON.stringify(tokens));
    const [tokenLife] = await sql(`select extract(epoch from expires_at - clock_timestamp())::float8 as s from account_access_tokens`);
    assert.ok(tokenLife.s > 890 && tokenLife.s <= 900, `the access token lives ${tokenLife.s} s`);
    const claims = decodeJwt(tokens.id_token);
    const [dbNow] = await sql(`select extract(epoch from clock_timestamp())::float8 as s`);
    assert.ok(claims.iat! <= dbNow.s + 1, `the ID token was issued ${claims.iat! - dbNow.s} s in the future`);
    assert.ok(claims.exp! - dbNow.s <= 600, `the ID token lives ${claims.exp! - dbNow.s} s from now`);
  });
});
