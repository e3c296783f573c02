import assert from "node:assert/strict";
import { Code } from "@connectrpc/connect";
import { AuthService } from "../../gen/outpost/auth/v1/auth_service_pb.js";
import { IdentityService } from "../../gen/outpost/identity/v1/identity_service_pb.js";
import { sessionHeader } from "../../contract/credentials.ts";
import { startTestCore, type TestCore } from "../support/core.ts";
import { rejectsWith } from "../support/errors.ts";

const password = "correct horse battery staple";
const hourMs = 3_600_000;

describe("auth: sessions end when idle, and record where they were opened", () => {
  let t: TestCore;
  let users = 0;
  before(async () => {
    // Sessions last a day and idle out after 3 hours (the test config).
    t = await startTestCore();
  });
  after(async () => {
    await t?.close();
  });

  /** A new account signed in twice, from two browsers: both session tokens. */
  async function twoBrowsers() {
    const email = `idle-${++users}@example.com`;
    const identity = t.client(IdentityService);
    const laptop = await identity.signUp({ email, password, name: "", client: { ip: "198.51.100.10", userAgent: "Laptop Firefox" } });
    const phone = await identity.signIn({ email, password, client: { ip: "2001:db8::7", userAgent: "Phone Safari" } });
    return { email, userId: laptop.user!.id, laptop: laptop.sessionToken, phone: phone.sessionToken };
  }

  const as = (session: string) => t.client(AuthService, { headers: { [sessionHeader]: session } });

  it("records the client IP and user agent of each sign-in with its session", async () => {
    const u = await twoBrowsers();
    const rows = await t.orm.em.fork().getConnection().execute(`select ip, user_agent from sessions where user_id = ? order by user_agent`, [u.userId]);
    assert.deepEqual(rows.map((r) => [r.ip, r.user_agent]), [["198.51.100.10", "Laptop Firefox"], ["2001:db8::7", "Phone Safari"]]);
  });

  it("ends a session unused for longer than the idle timeout, before its expiry", async () => {
    const u = await twoBrowsers();
    t.clock.advance(3 * hourMs - 60_000);
    await as(u.laptop).getSession({});
    t.clock.advance(2 * 60_000);
    // The phone was last used at sign-in, more than 3 hours ago; the laptop a minute ago.
    await rejectsWith(as(u.phone).getSession({}), Code.Unauthenticated, "unauthenticated");
    await as(u.laptop).getSession({});
  });

  it("moves the deadline on with each use, writing the last use at most once a minute", async () => {
    const u = await twoBrowsers();
    const lastUsed = async () =>
      new Date((await t.orm.em.fork().getConnection().execute(`select last_used_at from sessions where user_id = ? and user_agent = 'Laptop Firefox'`, [u.userId]))[0].last_used_at).getTime();
    const signedIn = await lastUsed();
    t.clock.advance(30_000);
    await as(u.laptop).getSession({});
    assert.equal(await lastUsed(), signedIn, "a use within the minute writes nothing");
    for (let i = 0; i < 3; i++) {
      t.clock.advance(2 * hourMs);
      await as(u.laptop).getSession({});
    }
    assert.ok((await lastUsed()) > signedIn + 5 * hourMs, "each use 2 hours apart was recorded");
    // 6 hours after sign-in, twice the idle timeout, used every 2 hours: still signed in.
    assert.equal((await as(u.laptop).getSession({})).user?.email, u.email);
  });
});
