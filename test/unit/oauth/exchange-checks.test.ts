/** The token exchange's checks, each written once: the statement's results and the failure they name. Pure, no database. */
import assert from "node:assert/strict";
import { codeCheckResults, codeChecks, firstFailedCheck, type CodeCheckParams } from "../../../core/oauth/exchange-checks.ts";
import { oauthFail, oauthFailureOf } from "../../../core/oauth/oauth-failure.ts";
import { firstFailedRefreshCheck, notUsedBefore, refreshCheckResults, refreshChecks } from "../../../core/account-oauth/refresh-checks.ts";

const params = (over: Partial<CodeCheckParams> = {}): CodeCheckParams => ({
  now: new Date(0),
  redirectUri: "https://app.example.com/callback",
  verifierSent: true,
  s256: "s256-challenge",
  plain: "plain-verifier",
  ...over,
});

describe("unit: the token exchange's checks", () => {
  it("computes one boolean per check, in the order failures are named, with every value a parameter", () => {
    const results = codeCheckResults(params());
    assert.match(results.text, /^array\[/);
    assert.equal(results.text.match(/\) is true/g)?.length, codeChecks.length, "each check null-safe, so a null is a failure");
    assert.ok(!results.text.includes("https://app.example.com"), "the redirect URI is a parameter");
    assert.ok(results.values.includes("https://app.example.com/callback"));
  });

  it("has one statement text whatever the request: a malformed verifier or no verifier changes only the values", () => {
    const texts = new Set([params(), params({ verifierSent: false, s256: null, plain: null }), params({ redirectUri: "" })].map((p) => codeCheckResults(p).text));
    assert.equal(texts.size, 1);
  });

  it("names the first check that failed, and nothing when all held", () => {
    const allHeld = codeChecks.map(() => true);
    assert.equal(firstFailedCheck(allHeld), undefined);
    const described = (failed: number[]) => firstFailedCheck(allHeld.map((_, i) => !failed.includes(i)))?.description;
    assert.equal(described([0]), "the code has expired");
    assert.equal(described([2, 4]), "redirect_uri is not the one of the authorization request", "the earlier of two");
    assert.equal(described([3, 4]), "code_verifier is required", "a missing verifier before a mismatch");
    assert.equal(described([6]), "this client must use PKCE, and the authorization request had no code_challenge");
    assert.ok(codeChecks.every((c) => c.failure.error === "invalid_grant"));
  });

  it("refuses results that do not line up with the checks (a statement out of step with the list)", () => {
    assert.throws(() => firstFailedCheck([true, true]), /not 7/);
  });
});

describe("unit: a refresh token's checks", () => {
  it("names the first that failed; the two that mean the token leaked revoke its family", () => {
    const failing = (failed: number[]) => firstFailedRefreshCheck(refreshChecks.map((_, i) => !failed.includes(i)));
    assert.equal(failing([]), undefined);
    assert.equal(failing([0, 1])?.revokesFamily, "account_oauth.refresh_token_misused", "another client's token, before a reuse");
    assert.equal(failing([1, 2]), notUsedBefore);
    assert.equal(failing([2, 3])?.revokesFamily, undefined, "a dead family is only invalid");
    assert.equal(failing([4])?.failure.error, "invalid_scope");
    assert.equal(refreshCheckResults({ now: new Date(0), requested: "[]" }).text.match(/\) is true/g)?.length, refreshChecks.length);
  });
});

describe("unit: an OAuth refusal as core throws it", () => {
  it("carries the OAuth error and its description as an OAuthError detail, under a Connect code that fits", () => {
    const refused = oauthFail("invalid_client", "client authentication failed");
    assert.equal(refused.reason, "unauthenticated");
    assert.deepEqual(oauthFailureOf(refused), { error: "invalid_client", description: "client authentication failed" });
    const connect = refused.toConnectError();
    assert.deepEqual(oauthFailureOf(connect), { error: "invalid_client", description: "client authentication failed" });
    assert.equal(oauthFail("invalid_grant", "x").reason, "invalid_argument");
  });

  it("is not read into other failures", () => {
    assert.equal(oauthFailureOf(new Error("boom")), undefined);
  });
});
