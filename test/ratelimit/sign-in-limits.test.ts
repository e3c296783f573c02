/** Sign-in attempts under their three limits (per account and IP, per account, per IP): see ratelimit.test.ts for calls. */
import assert from "node:assert/strict";
import { Code, type ConnectError } from "@connectrpc/connect";
import { IdentityService } from "../../gen/outpost/identity/v1/identity_service_pb.js";
import { RetryInfoSchema, type RetryInfo } from "../../gen/outpost/errors/v1/errors_pb.js";
import type { RateLimitConfig } from "../../core/ratelimit/policies.ts";
import { startTestCore, testConfig, type TestCore } from "../support/core.ts";
import { onPostgresServer } from "../support/database.ts";
import { rejectsWith } from "../support/errors.ts";

const limits: RateLimitConfig = {
  requestsPerWindow: 5,
  requestWindowSeconds: 60,
  signInAttemptsPerAccountIp: 3,
  signInAttemptsPerIp: 10,
  signInWindowSeconds: 900,
  signInAttemptsPerAccount: 7,
  signInAccountWindowSeconds: 3600,
  signUpsPerIp: 4,
  signUpWindowSeconds: 3600,
};

function retryInfo(error: ConnectError): RetryInfo {
  const [info] = error.findDetails(RetryInfoSchema);
  assert.ok(info, `expected a RetryInfo detail on: ${error.message}`);
  return info;
}

describe("rate limits: sign-in attempts per account and IP, per account, and per IP", () => {
  let t: TestCore;
  before(async () => {
    t = await startTestCore({ ...testConfig, rateLimits: limits });
  });
  after(() => t?.close());

  const signInFrom = (ip: string, email: string, password: string) => t.client(IdentityService).signIn({ email, password, client: { ip, userAgent: "test" } });

  const password = "correct horse battery staple";
  let victim: { id: string; email: string };
  let spread: { id: string; email: string };
  let accountRefusal: ConnectError;

  before(async () => {
    const res = await t.client(IdentityService).signUp({ email: "victim@example.com", password, name: "Victim" });
    victim = { id: res.user!.id, email: res.user!.email };
    await t.client(IdentityService).signUp({ email: "bystander@example.com", password, name: "Bystander" });
    const other = await t.client(IdentityService).signUp({ email: "spread@example.com", password, name: "Spread" });
    spread = { id: other.user!.id, email: other.user!.email };
  });

  it("after N wrong passwords from one address refuses even the right one from there, before checking it", async () => {
    for (let i = 0; i < 3; i++) {
      await rejectsWith(signInFrom("198.51.100.1", "victim@example.com", `wrong ${i}`), Code.Unauthenticated, "invalid_credentials");
    }
    accountRefusal = await rejectsWith(signInFrom("198.51.100.1", "Victim@Example.com", password), Code.ResourceExhausted, "rate_limited");
    assert.equal(accountRefusal.rawMessage, "too many sign-in attempts; try again in 15 minutes");
    const info = retryInfo(accountRefusal);
    assert.deepEqual([info.policy, info.limit, info.windowSeconds], ["sign_in_account_ip", 3, 900]);
    assert.ok(info.retryAfterSeconds > 840 && info.retryAfterSeconds <= 900);
  });

  it("lets the account's owner in from another address meanwhile: guessing cannot lock them out", async () => {
    const ok = await signInFrom("198.51.100.9", "victim@example.com", password);
    assert.match(ok.sessionToken, /^ops_/);
    await rejectsWith(signInFrom("198.51.100.1", "victim@example.com", password), Code.ResourceExhausted, "rate_limited");
  });

  it("bounds the account's failures from every address together, more slowly", async () => {
    // 7 per hour for the account, whatever the address; each address stays under its own 3.
    for (let i = 0; i < 7; i++) {
      await rejectsWith(signInFrom(`198.51.100.${20 + i}`, "spread@example.com", `wrong ${i}`), Code.Unauthenticated, "invalid_credentials");
    }
    const refused = await rejectsWith(signInFrom("198.51.100.30", "spread@example.com", password), Code.ResourceExhausted, "rate_limited");
    const info = retryInfo(refused);
    assert.deepEqual([info.policy, info.limit, info.windowSeconds], ["sign_in_account", 7, 3600]);
    assert.ok(info.retryAfterSeconds > 3500 && info.retryAfterSeconds <= 3600, `retry after ${info.retryAfterSeconds}`);
    assert.equal(refused.rawMessage, "too many sign-in attempts; try again in 60 minutes");
    // Another account is not affected.
    assert.match((await signInFrom("198.51.100.30", "bystander@example.com", password)).sessionToken, /^ops_/);
  });

  it("does not let one address refused for an account spend the account's count from everywhere", async () => {
    await t.client(IdentityService).signUp({ email: "hammered@example.com", password, name: "" });
    for (let i = 0; i < 3; i++) {
      await rejectsWith(signInFrom("198.51.100.40", "hammered@example.com", `wrong ${i}`), Code.Unauthenticated, "invalid_credentials");
    }
    // Refused at the address from now on; these must not count towards the account's 7.
    for (let i = 0; i < 5; i++) {
      await rejectsWith(signInFrom("198.51.100.40", "hammered@example.com", `wrong ${i}`), Code.ResourceExhausted, "rate_limited");
    }
    assert.match((await signInFrom("198.51.100.41", "hammered@example.com", password)).sessionToken, /^ops_/);
  });

  it("gives an unknown email the identical answer", async () => {
    for (let i = 0; i < 3; i++) {
      await rejectsWith(signInFrom("198.51.100.2", "nobody@example.com", `wrong ${i}`), Code.Unauthenticated, "invalid_credentials");
    }
    const refused = await rejectsWith(signInFrom("198.51.100.2", "nobody@example.com", password), Code.ResourceExhausted, "rate_limited");
    assert.equal(refused.rawMessage, accountRefusal.rawMessage);
    assert.equal(retryInfo(refused).policy, retryInfo(accountRefusal).policy);
  });

  it("leaves another account alone, even from the same IP", async () => {
    const ok = await signInFrom("198.51.100.1", "bystander@example.com", password);
    assert.match(ok.sessionToken, /^ops_/);
  });

  it("starts an account's count again after a successful sign-in", async () => {
    await t.client(IdentityService).signUp({ email: "forgetful@example.com", password, name: "" });
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < 2; i++) {
        await rejectsWith(signInFrom("198.51.100.3", "forgetful@example.com", "nope"), Code.Unauthenticated, "invalid_credentials");
      }
      await signInFrom("198.51.100.3", "forgetful@example.com", password);
    }
  });

  it("limits one IP across many accounts", async () => {
    for (let i = 0; i < 10; i++) {
      await rejectsWith(signInFrom("198.51.100.4", `sprayed-${i}@example.com`, "guess"), Code.Unauthenticated, "invalid_credentials");
    }
    const refused = await rejectsWith(signInFrom("198.51.100.4", "bystander@example.com", password), Code.ResourceExhausted, "rate_limited");
    assert.equal(retryInfo(refused).policy, "sign_in_ip");
    assert.equal(refused.rawMessage, "too many sign-in attempts; try again in 15 minutes");
    await signInFrom("198.51.100.5", "bystander@example.com", password);
  });

  it("records user.sign_in_throttled once per window for an existing account", async () => {
    await rejectsWith(signInFrom("198.51.100.1", "victim@example.com", password), Code.ResourceExhausted, "rate_limited");
    const rows = await t.orm.em
      .fork()
      .getConnection()
      .execute(`select actor_user_id, target_id, details from activity_events where action = 'user.sign_in_throttled' order by created_at`);
    const hammered = rows.find((r) => r.details.ip === "198.51.100.40");
    assert.equal(rows.length, 4, JSON.stringify(rows));
    assert.deepEqual(
      rows.map((r) => [r.target_id, r.details.policy, r.details.ip]),
      [
        [victim.id, "sign_in_account_ip", "198.51.100.1"],
        [spread.id, "sign_in_account", "198.51.100.30"],
        [hammered?.target_id, "sign_in_account_ip", "198.51.100.40"],
        // The attempt that crossed 198.51.100.4's limit was on the bystander's account.
        [rows[3].target_id, "sign_in_ip", "198.51.100.4"],
      ],
    );
    assert.notEqual(rows[3].target_id, victim.id);
  });

  onPostgresServer(() =>
    it("keeps no email in clear in the shared store", async function () {
      const rows = await t.orm.em.fork().getConnection().execute(`select key from rate_limits`);
      assert.ok(rows.length > 0);
      for (const { key } of rows) assert.doesNotMatch(key, /@/);
    }),
  );
});
