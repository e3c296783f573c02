import assert from "node:assert/strict";
import { Code } from "@connectrpc/connect";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { AuthService } from "../../gen/outpost/auth/v1/auth_service_pb.js";
import { IdentityService } from "../../gen/outpost/identity/v1/identity_service_pb.js";
import { clientIpHeader, sessionHeader } from "../../contract/credentials.ts";
import { RetryInfoSchema } from "../../gen/outpost/errors/v1/errors_pb.js";
import { startTestCore, testConfig, type TestCore } from "../support/core.ts";
import { rejectsWith } from "../support/errors.ts";

const password = "correct horse battery staple";
const hourMs = 3_600_000;

describe("auth: sessions, idle timeout and password changes", () => {
  let t: TestCore;
  let users = 0;
  before(async () => {
    // Idle after 3 hours (the test config); 3 wrong passwords from one address, then refused.
    t = await startTestCore({ ...testConfig, rateLimits: { ...testConfig.rateLimits, signInAttemptsPerAccountIp: 3 } });
  });
  after(async () => {
    await t?.close();
  });

  /** A new account signed in twice, from two browsers: its email and both session tokens. */
  async function twoBrowsers() {
    const email = `user-${++users}@example.com`;
    const identity = t.client(IdentityService);
    const laptop = await identity.signUp({ email, password, name: "", client: { ip: "198.51.100.10", userAgent: "Laptop Firefox" } });
    const phone = await identity.signIn({ email, password, client: { ip: "2001:db8::7", userAgent: "Phone Safari" } });
    return { email, userId: laptop.user!.id, laptop: laptop.sessionToken, phone: phone.sessionToken };
  }

  const as = (session: string, ip = "198.51.100.10") => t.client(AuthService, { headers: { [sessionHeader]: session, [clientIpHeader]: ip } });
  const activity = async (userId: string, action: string) =>
    t.orm.em
      .fork()
      .getConnection()
      .execute(`select details, actor_api_key_id from activity_events where actor_user_id = ? and action = ? order by created_at`, [userId, action]);

  it("lists the caller's sessions with where they were signed in from, the current one marked; an API key may list them", async () => {
    const u = await twoBrowsers();
    const { sessions } = await as(u.phone).listSessions({});
    assert.equal(sessions.length, 2);
    const byAgent = new Map(sessions.map((s) => [s.userAgent, s]));
    assert.deepEqual([byAgent.get("Laptop Firefox")?.ip, byAgent.get("Laptop Firefox")?.current], ["198.51.100.10", false]);
    assert.deepEqual([byAgent.get("Phone Safari")?.ip, byAgent.get("Phone Safari")?.current], ["2001:db8::7", true]);
    for (const s of sessions) {
      assert.ok(s.createdAt && s.lastUsedAt && s.expiresAt);
      // Unused, a session ends at its idle deadline (3 hours in these tests), before its 1-day expiry.
      assert.equal(timestampDate(s.expiresAt).getTime() - timestampDate(s.lastUsedAt).getTime(), 3 * hourMs);
    }
    const { key } = await t.client(IdentityService).issueApiKey({ email: u.email, name: "script" });
    const listed = await t.client(AuthService, { apiKey: key }).listSessions({});
    assert.deepEqual(
      listed.sessions.map((s) => s.current),
      [false, false],
    );
    // Nobody else's sessions.
    const other = await twoBrowsers();
    assert.equal((await as(other.laptop).listSessions({})).sessions.length, 2);
  });

  it("refuses an API key for ending sessions and changing the password", async () => {
    const u = await twoBrowsers();
    const { key } = await t.client(IdentityService).issueApiKey({ email: u.email, name: "script" });
    const withKey = t.client(AuthService, { apiKey: key });
    const [laptop] = (await as(u.laptop).listSessions({})).sessions.filter((s) => s.current);
    await rejectsWith(withKey.revokeSession({ sessionId: laptop.id }), Code.PermissionDenied, "permission_denied");
    await rejectsWith(withKey.revokeOtherSessions({}), Code.PermissionDenied, "permission_denied");
    await rejectsWith(withKey.changePassword({ currentPassword: password, newPassword: "a brand new password" }), Code.PermissionDenied, "permission_denied");
    await as(u.laptop).getSession({});
    await as(u.phone).getSession({});
  });

  it("revokes one session: it gets unauthenticated at once, the rest work; another user's session looks absent", async () => {
    const u = await twoBrowsers();
    const phone = (await as(u.laptop).listSessions({})).sessions.find((s) => s.userAgent === "Phone Safari")!;
    const stranger = await twoBrowsers();
    await rejectsWith(as(stranger.laptop).revokeSession({ sessionId: phone.id }), Code.NotFound, "not_found");
    await as(u.phone).getSession({});
    await as(u.laptop).revokeSession({ sessionId: phone.id });
    await rejectsWith(as(u.phone).getSession({}), Code.Unauthenticated, "unauthenticated");
    await as(u.laptop).getSession({});
    await rejectsWith(as(u.laptop).revokeSession({ sessionId: phone.id }), Code.NotFound, "not_found");
    const [event] = await activity(u.userId, "session.revoked");
    assert.deepEqual(event.details, { ip: "2001:db8::7", userAgent: "Phone Safari", current: "false" });
  });

  it("revokes every other session, keeping the caller's", async () => {
    const u = await twoBrowsers();
    const third = await t.client(IdentityService).signIn({ email: u.email, password, client: { ip: "203.0.113.3", userAgent: "Tablet" } });
    assert.equal((await as(u.laptop).revokeOtherSessions({})).revoked, 2);
    await rejectsWith(as(u.phone).getSession({}), Code.Unauthenticated);
    await rejectsWith(as(third.sessionToken).getSession({}), Code.Unauthenticated);
    assert.deepEqual(
      (await as(u.laptop).listSessions({})).sessions.map((s) => s.current),
      [true],
    );
    const [event] = await activity(u.userId, "user.other_sessions_revoked");
    assert.deepEqual(event.details, { count: "2", ip: "198.51.100.10" });
  });

  it("changes the password: the other session ends, this one and API keys stay, the new password signs in", async () => {
    const u = await twoBrowsers();
    const { key } = await t.client(IdentityService).issueApiKey({ email: u.email, name: "script" });
    const res = await as(u.laptop).changePassword({ currentPassword: password, newPassword: "a brand new password" });
    assert.equal(res.endedSessions, 1);
    await rejectsWith(as(u.phone).getSession({}), Code.Unauthenticated, "unauthenticated");
    assert.equal((await as(u.laptop).getSession({})).user?.email, u.email);
    assert.equal((await t.client(AuthService, { apiKey: key }).getSession({})).user?.email, u.email);
    const identity = t.client(IdentityService);
    await rejectsWith(identity.signIn({ email: u.email, password, client: { ip: "203.0.113.50" } }), Code.Unauthenticated, "invalid_credentials");
    await identity.signIn({ email: u.email, password: "a brand new password", client: { ip: "203.0.113.50" } });
    const [event] = await activity(u.userId, "user.password_changed");
    assert.deepEqual(event.details, { endedSessions: "1", ip: "198.51.100.10" });
  });

  it("refuses a wrong current password, and counts it as a failed sign-in from that address", async () => {
    const u = await twoBrowsers();
    for (let i = 0; i < 3; i++) {
      const wrong = await rejectsWith(
        as(u.laptop, "203.0.113.9").changePassword({ currentPassword: `guess ${i}`, newPassword: "a brand new password" }),
        Code.InvalidArgument,
        "wrong_password",
      );
      assert.equal(wrong.rawMessage, "currentPassword: the current password is wrong");
    }
    assert.equal((await activity(u.userId, "user.password_change_failed")).length, 3);
    // Over the sign-in limit for this account from this address: even the right password is refused,
    // and so is a sign-in from there; nothing changed, and the other session still works.
    const refused = await rejectsWith(
      as(u.laptop, "203.0.113.9").changePassword({ currentPassword: password, newPassword: "a brand new password" }),
      Code.ResourceExhausted,
      "rate_limited",
    );
    assert.equal(refused.findDetails(RetryInfoSchema)[0]?.policy, "sign_in_account_ip");
    await rejectsWith(t.client(IdentityService).signIn({ email: u.email, password, client: { ip: "203.0.113.9" } }), Code.ResourceExhausted, "rate_limited");
    await as(u.phone).getSession({});
    await t.client(IdentityService).signIn({ email: u.email, password, client: { ip: "203.0.113.10" } });
  });

  it("validates the new password", async () => {
    const u = await twoBrowsers();
    const bad = await rejectsWith(as(u.laptop).changePassword({ currentPassword: password, newPassword: "short" }), Code.InvalidArgument);
    assert.match(bad.rawMessage, /new_password/);
  });
});
