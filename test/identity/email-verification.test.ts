import assert from "node:assert/strict";
import { Code } from "@connectrpc/connect";
import { IdentityService } from "../../gen/outpost/identity/v1/identity_service_pb.js";
import { AuthService } from "../../gen/outpost/auth/v1/auth_service_pb.js";
import { RetryInfoSchema } from "../../gen/outpost/errors/v1/errors_pb.js";
import { startTestCore, testConfig, type TestCore } from "../support/core.ts";
import { rejectsWith } from "../support/errors.ts";
import { startSmtpReceiver, verificationLinkTo, type SmtpReceiver } from "../support/receivers.ts";

describe("identity: email verification by a mailed link", () => {
  let t: TestCore;
  let smtp: SmtpReceiver;
  const sql = async (query: string, params: unknown[] = []) => t.orm.em.fork().getConnection().execute(query, params);
  const verified = async (token: string) => (await t.client(AuthService, { session: token }).getSession({})).user!.emailVerified;
  const events = async (email: string) =>
    (
      (await sql(`select action, details->>'via' as via from activity_events where details->>'email' = ? order by created_at, id`, [email])) as Array<{
        action: string;
        via: string | null;
      }>
    ).map((e) => (e.via ? `${e.action}:${e.via}` : e.action));

  before(async () => {
    smtp = await startSmtpReceiver();
    t = await startTestCore(testConfig, { smtp: { url: smtp.url, from: "Outpost <outpost@example.test>" } });
  });
  after(async () => {
    await t?.close();
    await smtp?.close();
  });

  it("mails a link at sign-up that verifies the address once; sign-in works before", async () => {
    const ada = await t.signUp("Ada.Verify@Example.com");
    assert.equal(await verified(ada.token), false, "signed in, not verified yet");
    const mailed = verificationLinkTo(smtp, "ada.verify@example.com");
    assert.ok(mailed, "the link was mailed to the address");
    assert.equal(mailed.link, `http://account.test/verify-email?token=${mailed.token}`);
    const [stored] = await sql(`select token_hash from email_verifications where user_id = ?`, [ada.userId]);
    assert.notEqual(stored.token_hash, mailed.token, "only the hash is stored");

    const res = await t.client(IdentityService).verifyEmail({ token: mailed.token });
    assert.equal(res.email, "ada.verify@example.com");
    assert.equal(await verified(ada.token), true);
    const again = await rejectsWith(t.client(IdentityService).verifyEmail({ token: mailed.token }), Code.FailedPrecondition, "failed_precondition");
    assert.match(again.rawMessage, /already been used/);
    assert.deepEqual(await events("ada.verify@example.com"), ["user.email_verification_issued", "user.email_verified:link"]);
  });

  it("refuses an expired link, an unknown one and one replaced by a newer link, verifying nothing", async () => {
    const bo = await t.signUp("bo.verify@example.com");
    const first = verificationLinkTo(smtp, bo.email)!;
    await sql(`update email_verifications set expires_at = now() - interval '1 minute' where user_id = ?`, [bo.userId]);
    const expired = await rejectsWith(t.client(IdentityService).verifyEmail({ token: first.token }), Code.FailedPrecondition);
    assert.match(expired.rawMessage, /expired/);
    await rejectsWith(t.client(IdentityService).verifyEmail({ token: `opv_${"x".repeat(40)}` }), Code.NotFound, "not_found");
    await rejectsWith(t.client(IdentityService).verifyEmail({ token: "not a token" }), Code.NotFound, "not_found");
    assert.equal(await verified(bo.token), false);

    const resent = await t.client(AuthService, { session: bo.token }).sendVerificationEmail({});
    assert.deepEqual([resent.email, resent.emailSent], [bo.email, true]);
    const second = verificationLinkTo(smtp, bo.email)!;
    assert.notEqual(second.token, first.token);
    await rejectsWith(t.client(IdentityService).verifyEmail({ token: first.token }), Code.NotFound, "not_found");
    await t.client(IdentityService).verifyEmail({ token: second.token });
    assert.equal(await verified(bo.token), true);
    await rejectsWith(t.client(AuthService, { session: bo.token }).sendVerificationEmail({}), Code.FailedPrecondition, "failed_precondition");
  });

  it("uses a link once when it is opened many times at once", async () => {
    const cy = await t.signUp("cy.verify@example.com");
    const { token } = verificationLinkTo(smtp, cy.email)!;
    const results = await Promise.allSettled(Array.from({ length: 5 }, () => t.client(IdentityService).verifyEmail({ token })));
    assert.equal(results.filter((r) => r.status === "fulfilled").length, 1);
    assert.deepEqual(await events(cy.email), ["user.email_verification_issued", "user.email_verified:link"]);
  });

  it("limits new links to 5 an hour per person, saying when to try again", async () => {
    const dee = await t.signUp("dee.verify@example.com");
    const auth = t.client(AuthService, { session: dee.token });
    for (let i = 0; i < 5; i++) await auth.sendVerificationEmail({});
    const refused = await rejectsWith(auth.sendVerificationEmail({}), Code.ResourceExhausted, "rate_limited");
    const [retry] = refused.findDetails(RetryInfoSchema);
    assert.equal(retry?.policy, "email_verification");
    assert.ok(retry.retryAfterSeconds > 0);
  });
});

describe("identity: email verification without SMTP (the operator's CLI path)", () => {
  let t: TestCore;
  before(async () => {
    t = await startTestCore();
  });
  after(async () => {
    await t?.close();
  });

  it("mails nothing, says how to verify instead, and the operator's path verifies once", async () => {
    const eve = await t.signUp("eve.verify@example.com");
    const [{ n }] = await t.orm.em.fork().getConnection().execute(`select count(*)::int as n from email_verifications`);
    assert.equal(n, 0, "no link without a mailer");
    const refused = await rejectsWith(t.client(AuthService, { session: eve.token }).sendVerificationEmail({}), Code.FailedPrecondition);
    assert.match(refused.rawMessage, /outpost user verify-email eve\.verify@example\.com/);

    const marked = await t.client(IdentityService).markEmailVerified({ email: "EVE.verify@example.com" });
    assert.deepEqual([marked.user?.email, marked.user?.emailVerified, marked.alreadyVerified], ["eve.verify@example.com", true, false]);
    assert.equal((await t.client(AuthService, { session: eve.token }).getSession({})).user?.emailVerified, true);
    const again = await t.client(IdentityService).markEmailVerified({ email: eve.email });
    assert.equal(again.alreadyVerified, true);
    const rows = (await t.orm.em.fork().getConnection().execute(`select actor_kind, details from activity_events where action = 'user.email_verified'`)) as Array<{
      actor_kind: string;
      details: Record<string, string>;
    }>;
    assert.deepEqual(
      rows.map((r) => [r.actor_kind, r.details.via, r.details.email]),
      [["system", "operator", eve.email]],
    );
    await rejectsWith(t.client(IdentityService).markEmailVerified({ email: "nobody@example.com" }), Code.NotFound, "not_found");
  });
});
