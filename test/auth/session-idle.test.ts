import assert from "node:assert/strict";
import { Code } from "@connectrpc/connect";
import { AuthService } from "../../gen/outpost/auth/v1/auth_service_pb.js";
import { IdentityService } from "../../gen/outpost/identity/v1/identity_service_pb.js";
import { sessionHeader } from "../../contract/credentials.ts";
import { touchSession } from "../../core/auth/sessions.ts";
import { touchApiKey } from "../../core/auth/credential-store.ts";
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
    assert.deepEqual(
      rows.map((r) => [r.ip, r.user_agent]),
      [
        ["198.51.100.10", "Laptop Firefox"],
        ["2001:db8::7", "Phone Safari"],
      ],
    );
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
      new Date(
        (await t.orm.em.fork().getConnection().execute(`select last_used_at from sessions where user_id = ? and user_agent = 'Laptop Firefox'`, [u.userId]))[0]
          .last_used_at,
      ).getTime();
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

  it("writes the last use once for many requests at once, for a session and for an API key", async () => {
    const u = await twoBrowsers();
    const { key, apiKey } = await as(u.laptop).createApiKey({ name: "script" });
    // Every row update that sets last_used_at is counted by a trigger: the writes themselves.
    const connection = t.orm.em.fork().getConnection();
    await connection.execute(`create table if not exists last_use_writes (tbl text not null)`, [], "run");
    await connection.execute(
      `create or replace function count_last_use_write() returns trigger language plpgsql as $$
         begin insert into last_use_writes values (tg_table_name); return new; end $$`,
      [],
      "run",
    );
    for (const table of ["sessions", "api_keys"]) {
      await connection.execute(
        `create or replace trigger ${table}_last_use after update of last_used_at on ${table} for each row execute function count_last_use_write()`,
        [],
        "run",
      );
    }
    const writes = async () => {
      const rows = await connection.execute(`select tbl, count(*)::int as n from last_use_writes group by tbl`);
      await connection.execute(`delete from last_use_writes`, [], "run");
      return Object.fromEntries(rows.map((r) => [r.tbl, r.n]));
    };
    const [session] = await connection.execute(`select id, last_used_at from sessions where user_id = ? and user_agent = 'Laptop Firefox'`, [u.userId]);
    const apiKeyAs = () => t.client(AuthService, { apiKey: key });
    await apiKeyAs().getSession({});
    await writes();

    // Twenty requests that all read the last use before any wrote it, each a moment later than
    // the one before: one of them writes.
    t.clock.advance(2 * 60_000);
    const stale = { id: session.id, lastUsedAt: new Date(session.last_used_at) };
    const [keyRow] = await connection.execute(`select last_used_at from api_keys where id = ?`, [apiKey!.id]);
    const staleKey = { id: apiKey!.id, lastUsedAt: new Date(keyRow.last_used_at) };
    const moments = Array.from({ length: 20 }, (_, i) => new Date(t.clock.now().getTime() + i));
    await Promise.all(moments.map((now) => touchSession(t.deps.statements.on(t.orm.em.fork()), stale, now)));
    await Promise.all(moments.map((now) => touchApiKey(t.deps.statements.on(t.orm.em.fork()), staleKey, now)));
    assert.deepEqual(await writes(), { sessions: 1, api_keys: 1 });

    // The same through the API, as concurrent requests.
    t.clock.advance(2 * 60_000);
    await Promise.all(Array.from({ length: 20 }, () => as(u.laptop).getSession({})));
    await Promise.all(Array.from({ length: 20 }, () => apiKeyAs().getSession({})));
    assert.deepEqual(await writes(), { sessions: 1, api_keys: 1 });
  });
});
