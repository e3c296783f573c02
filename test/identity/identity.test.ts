import assert from "node:assert/strict";
import { Code } from "@connectrpc/connect";
import { IdentityService } from "../../gen/outpost/identity/v1/identity_service_pb.js";
import { AuthService } from "../../gen/outpost/auth/v1/auth_service_pb.js";
import { startTestCore, type TestCore } from "../support/core.ts";
import { rejectsWith } from "../support/errors.ts";

describe("identity: sign-up, sign-in, sign-out and sessions", () => {
  let t: TestCore;
  before(async () => {
    t = await startTestCore();
  });
  after(async () => {
    await t?.close();
  });

  it("signs up, and the session token authenticates", async () => {
    const identity = t.client(IdentityService);
    const res = await identity.signUp({ email: "Ada@Example.com", password: "correct horse battery", name: "Ada" });
    assert.equal(res.user?.email, "ada@example.com");
    assert.match(res.sessionToken, /^ops_[0-9A-Za-z]{40}$/);
    const session = await t.client(AuthService, { session: res.sessionToken }).getSession({});
    assert.equal(session.user?.email, "ada@example.com");
    assert.equal(session.user?.platformAdmin, false);
  });

  it("refuses a second account with the same email in any case", async () => {
    await rejectsWith(t.client(IdentityService).signUp({ email: "ADA@example.com", password: "another password!", name: "" }), Code.AlreadyExists, "email_taken");
  });

  it("signs in with the right password and gives one answer for a wrong password or unknown email", async () => {
    const identity = t.client(IdentityService);
    const ok = await identity.signIn({ email: "ada@EXAMPLE.com", password: "correct horse battery" });
    assert.match(ok.sessionToken, /^ops_/);
    const wrong = await rejectsWith(identity.signIn({ email: "ada@example.com", password: "nope" }), Code.Unauthenticated, "invalid_credentials");
    const unknown = await rejectsWith(identity.signIn({ email: "nobody@example.com", password: "nope" }), Code.Unauthenticated, "invalid_credentials");
    assert.equal(wrong.rawMessage, unknown.rawMessage);
  });

  it("records a failed sign-in of an existing account in the activity log", async () => {
    const before = await t.orm.em.fork().getConnection().execute(`select count(*)::int as n from activity_events where action = 'user.sign_in_failed'`);
    await rejectsWith(t.client(IdentityService).signIn({ email: "ada@example.com", password: "wrong again" }), Code.Unauthenticated);
    const after = await t.orm.em.fork().getConnection().execute(`select count(*)::int as n from activity_events where action = 'user.sign_in_failed'`);
    assert.equal(after[0].n, before[0].n + 1);
  });

  it("signs out: the token stops working at once", async () => {
    const identity = t.client(IdentityService);
    const { sessionToken } = await identity.signIn({ email: "ada@example.com", password: "correct horse battery" });
    await t.client(AuthService, { session: sessionToken }).getSession({});
    await t.client(IdentityService, { session: sessionToken }).signOut({});
    await rejectsWith(t.client(AuthService, { session: sessionToken }).getSession({}), Code.Unauthenticated);
  });

  it("ends a session when it expires", async () => {
    const { token } = await t.signUp("expiring@example.com");
    t.clock.advance(86_400_000 + 1000);
    await rejectsWith(t.client(AuthService, { session: token }).getSession({}), Code.Unauthenticated);
  });

  it("validates input and names the field", async () => {
    const identity = t.client(IdentityService);
    const bad = await rejectsWith(identity.signUp({ email: "not-an-email", password: "short", name: " padded " }), Code.InvalidArgument);
    assert.match(bad.rawMessage, /email/);
    assert.match(bad.rawMessage, /password/);
    assert.match(bad.rawMessage, /name/);
  });

  it("stores no password, token or key in clear", async () => {
    const rows = await t.orm.em.fork().getConnection().execute(`select password_hash from users where email = 'ada@example.com'`);
    assert.match(rows[0].password_hash, /^\$argon2id\$/);
    const sessions = await t.orm.em.fork().getConnection().execute(`select token_hash from sessions`);
    for (const s of sessions) assert.match(s.token_hash, /^[0-9a-f]{64}$/);
  });
});
