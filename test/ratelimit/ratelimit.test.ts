import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import type { DescService } from "@bufbuild/protobuf";
import { pino } from "pino";
import { AuthService } from "../../gen/outpost/auth/v1/auth_service_pb.js";
import { IdentityService } from "../../gen/outpost/identity/v1/identity_service_pb.js";
import { RetryInfoSchema, type RetryInfo } from "../../gen/outpost/errors/v1/errors_pb.js";
import { randomBytes } from "node:crypto";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { createWritableIterable } from "@connectrpc/connect/protocol";
import { AgentService, type ConnectRequestSchema } from "../../gen/outpost/agent/v1/agent_service_pb.js";
import { agentKeyHeader, apiKeyHeader } from "../../contract/credentials.ts";
import { clientIpHeader } from "../../contract/credentials.ts";
import pg from "pg";
import { createPostgresRateLimits, openCountPool, openRateLimits } from "../../core/ratelimit/limits.ts";
import { deleteExpiredCounts } from "../../core/ratelimit/ratelimit-queries.ts";
import { onConnection, sql } from "../../core/db/sql.ts";
import { row, text } from "../../core/db/rows.ts";
import type { Limiter } from "../../core/ratelimit/limiter.ts";
import type { RateLimitConfig } from "../../core/ratelimit/policies.ts";
import { createCore } from "../../server/core.ts";
import { createNoSignInVerifier } from "../../core/game-oauth/login-verifier.ts";
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

describe("rate limits", () => {
  let t: TestCore;
  const closers: Array<() => Promise<void>> = [];

  /** Another core over the same database with its own counters, as a second instance would be. */
  function anotherInstance(config: RateLimitConfig) {
    const rateLimits = openRateLimits(config, t.database);
    closers.push(() => rateLimits.close());
    const core = createCore({
      orm: t.orm,
      statements: t.deps.statements,
      activity: t.deps.activity,
      credentials: t.deps.credentials,
      clock: t.clock,
      logger: pino({ level: "silent" }),
      config: { ...testConfig, rateLimits: config },
      rateLimits,
      passwords: t.deps.passwords,
      signingKeys: t.signingKeys,
      agents: t.agents,
      consoles: t.deps.consoles,
      files: t.deps.files,
      lifecycles: t.deps.lifecycles,
      stats: t.deps.stats,
      heartbeats: t.deps.heartbeats,
      loginVerifier: createNoSignInVerifier(),
      events: t.events,
      loginCodes: t.deps.loginCodes,
      knownDevices: t.deps.knownDevices,
      watches: t.deps.watches,
      notifier: t.deps.notifier,
      metrics: t.deps.metrics,
      keyEncryptionKey: t.deps.keyEncryptionKey,
      outbound: t.deps.outbound,
      mailer: t.deps.mailer,
      push: t.deps.push,
    });
    return {
      rateLimits,
      client<S extends DescService>(service: S, headers: Record<string, string>): Client<S> {
        return createClient(
          service,
          core.transport([
            (next) => (req) => {
              for (const [name, value] of Object.entries(headers)) req.header.set(name, value);
              return next(req);
            },
          ]),
        );
      },
    };
  }

  let keyCount = 0;
  async function newApiKey(): Promise<string> {
    const { email } = await t.signUp(`key-owner-${++keyCount}@example.com`);
    return (await t.client(IdentityService).issueApiKey({ email, name: "script" })).key;
  }

  before(async () => {
    t = await startTestCore({ ...testConfig, rateLimits: limits });
  });
  after(async () => {
    for (const close of closers) await close();
    await t?.close();
  });

  it("counts in PostgreSQL on a PostgreSQL server and in memory on the embedded database", () => {
    assert.equal(t.rateLimits.store, t.database.kind === "postgres" ? "postgres" : "memory");
  });

  onPostgresServer(() =>
    it("writes the counts without waiting for a disk flush, on every connection of their pool; core's own statements still wait", async () => {
      const pool = openCountPool(t.database.url);
      try {
        // Both of the pool's connections at once, so each is a new one.
        const settings = await Promise.all(
          [1, 2].map(async () => {
            const client = await pool.connect();
            try {
              const { rows } = await client.query<{ setting: string; source: string }>("select setting, source from pg_settings where name = 'synchronous_commit'");
              return `${rows[0].setting} (${rows[0].source})`;
            } finally {
              client.release();
            }
          }),
        );
        assert.deepEqual(settings, ["off (session)", "off (session)"]);
      } finally {
        await pool.end();
      }
      // Core's connections keep the server's own setting.
      const core = await t.deps.statements.on(t.orm.em.fork()).one(sql`select source from pg_settings where name = 'synchronous_commit'`, row({ source: text }));
      assert.notEqual(core?.source, "session");
    }),
  );

  onPostgresServer(() =>
    it("sweeps the counts of windows that ended before the cutoff and keeps the others", async () => {
      const pool = openCountPool(t.database.url);
      try {
        await pool.query(`insert into rate_limits (key, points, expire) values ('sweep:ended', 1, 1000), ('sweep:at-cutoff', 1, 2000), ('sweep:open', 1, 3000)`);
        await deleteExpiredCounts(onConnection(pool), 2000);
        const { rows } = await pool.query<{ key: string }>(`select key from rate_limits where key like 'sweep:%' order by key`);
        assert.deepEqual(
          rows.map((r) => r.key),
          ["sweep:at-cutoff", "sweep:open"],
        );
      } finally {
        await pool.end();
      }
    }),
  );

  describe("calls per credential and per IP", () => {
    it("refuses a burst over the limit from one API key with RetryInfo, and another key is unaffected", async () => {
      const [burst, other] = [await newApiKey(), await newApiKey()];
      const auth = t.client(AuthService, { apiKey: burst });
      for (let i = 0; i < 5; i++) await auth.getSession({});
      const refused = await rejectsWith(auth.getSession({}), Code.ResourceExhausted, "rate_limited");
      const info = retryInfo(refused);
      assert.ok(info.retryAfterSeconds >= 1 && info.retryAfterSeconds <= 60, `retry after ${info.retryAfterSeconds}`);
      assert.deepEqual([info.limit, info.windowSeconds, info.policy], [5, 60, "default"]);
      assert.match(refused.rawMessage, /^too many requests; try again in \d+ seconds?$/);
      const session = await t.client(AuthService, { apiKey: other }).getSession({});
      assert.ok(session.user?.email);
    });

    it("limits an invalid credential before looking it up", async () => {
      const bogus = t.client(AuthService, { apiKey: "opk_" + "x".repeat(40) });
      for (let i = 0; i < 5; i++) await rejectsWith(bogus.getSession({}), Code.Unauthenticated);
      await rejectsWith(bogus.getSession({}), Code.ResourceExhausted, "rate_limited");
    });

    it("limits anonymous calls per client IP", async () => {
      const from = (ip: string) => t.client(AuthService, { headers: { [clientIpHeader]: ip } });
      for (let i = 0; i < 5; i++) await rejectsWith(from("203.0.113.7").getSession({}), Code.Unauthenticated);
      const refused = await rejectsWith(from("203.0.113.7").getSession({}), Code.ResourceExhausted, "rate_limited");
      assert.equal(retryInfo(refused).policy, "default");
      // The same address written IPv4-mapped is the same client; another address is not.
      await rejectsWith(from("::ffff:203.0.113.7").getSession({}), Code.ResourceExhausted, "rate_limited");
      await rejectsWith(from("203.0.113.8").getSession({}), Code.Unauthenticated);
    });

    it("counts an IPv6 client by its /64", async () => {
      const from = (ip: string) => t.client(AuthService, { headers: { [clientIpHeader]: ip } });
      for (let i = 0; i < 5; i++) await rejectsWith(from(`2001:db8:1:2::${i + 1}`).getSession({}), Code.Unauthenticated);
      await rejectsWith(from("2001:db8:1:2:ffff::9").getSession({}), Code.ResourceExhausted, "rate_limited");
      await rejectsWith(from("2001:db8:1:3::1").getSession({}), Code.Unauthenticated);
    });

    it("refuses an address sending credentials that match nothing, a new one each time, before any lookup; its known users still get in", async () => {
      const randomKey = () => `opk_${randomBytes(30).toString("base64url").replace(/[-_]/g, "x").slice(0, 40)}`;
      const from = (key: string, ip = "198.51.100.77") => t.client(AuthService, { headers: { [apiKeyHeader]: key, [clientIpHeader]: ip } });
      const [known, fresh] = [await newApiKey(), await newApiKey()];
      await from(known).getSession({});
      for (let i = 0; i < 60; i++) await rejectsWith(from(randomKey()).getSession({}), Code.Unauthenticated, "unauthenticated");
      const refused = await rejectsWith(from(randomKey()).getSession({}), Code.ResourceExhausted, "rate_limited");
      const info = retryInfo(refused);
      assert.deepEqual([info.policy, info.limit, info.windowSeconds], ["bad_credential_ip", 60, 600]);
      assert.ok(info.retryAfterSeconds > 500 && info.retryAfterSeconds <= 600, `retry after ${info.retryAfterSeconds}`);
      assert.match(refused.rawMessage, /^too many unknown credentials from your address; try again in \d+ seconds$/);
      // From now on refused before the lookup and before its own count: the store gains nothing.
      const counted = async () =>
        t.database.kind === "postgres" ? (await t.orm.em.fork().getConnection().execute(`select count(*)::int as n from rate_limits`))[0].n : 0;
      const before = await counted();
      for (let i = 0; i < 5; i++) await rejectsWith(from(randomKey()).getSession({}), Code.ResourceExhausted, "rate_limited");
      assert.equal(await counted(), before);
      // A user of the same address whose key this instance has seen work keeps working; a key it has not waits out the window.
      assert.ok((await from(known).getSession({})).user?.email);
      await rejectsWith(from(fresh).getSession({}), Code.ResourceExhausted, "rate_limited");
      // Agents from that address too; other addresses are unaffected.
      const agent = createClient(
        AgentService,
        t.core.transport([(next) => (req) => (req.header.set(agentKeyHeader, `opa_${"y".repeat(40)}`), req.header.set(clientIpHeader, "198.51.100.77"), next(req))]),
      );
      const requests = createWritableIterable<MessageInitShape<typeof ConnectRequestSchema>>();
      const opened = async () => {
        for await (const response of agent.connect(requests)) void response;
      };
      await rejectsWith(opened(), Code.ResourceExhausted, "rate_limited");
      await rejectsWith(from(randomKey(), "198.51.100.78").getSession({}), Code.Unauthenticated, "unauthenticated");
      assert.ok((await from(fresh, "198.51.100.78").getSession({})).user?.email);
    });

    onPostgresServer(() =>
      it("shares one limit between instances on the same PostgreSQL database", async function () {
        const key = await newApiKey();
        const second = anotherInstance(limits);
        assert.equal(second.rateLimits.store, "postgres");
        const one = t.client(AuthService, { apiKey: key });
        const two = second.client(AuthService, { [apiKeyHeader]: key });
        for (let i = 0; i < 3; i++) await one.getSession({});
        for (let i = 0; i < 2; i++) await two.getSession({});
        await rejectsWith(two.getSession({}), Code.ResourceExhausted, "rate_limited");
        await rejectsWith(one.getSession({}), Code.ResourceExhausted, "rate_limited");
      }),
    );

    it("lets the key through again once the window has passed", async () => {
      const key = await newApiKey();
      const short = anotherInstance({ ...limits, requestsPerWindow: 2, requestWindowSeconds: 1 });
      const auth = short.client(AuthService, { [apiKeyHeader]: key });
      await auth.getSession({});
      await auth.getSession({});
      const refused = await rejectsWith(auth.getSession({}), Code.ResourceExhausted, "rate_limited");
      const info = retryInfo(refused);
      assert.deepEqual([info.retryAfterSeconds, info.limit, info.windowSeconds], [1, 2, 1]);
      await sleep(1_100);
      await auth.getSession({});
    });

    it("does not limit the services for the edge alone", async () => {
      const identity = t.client(IdentityService, { headers: { [clientIpHeader]: "203.0.113.50" } });
      for (let i = 0; i < 7; i++) await identity.signOut({});
    });
  });

  describe("one key's concurrent calls", () => {
    /** 12 calls of one key at once against a smaller limit, as a script's parallel requests arrive. */
    async function burst(limiter: Limiter, key: string) {
      const decisions = await Promise.all(Array.from({ length: 12 }, () => limiter.consume(key)));
      assert.deepEqual(
        decisions.map((d) => d.consumed).sort((a, b) => a - b),
        Array.from({ length: 12 }, (_, i) => i + 1),
        "each call is counted once, in some order",
      );
      for (const d of decisions) assert.equal(d.allowed, d.consumed <= limiter.policy.limit, JSON.stringify(d));
      assert.ok(decisions.every((d) => d.retryAfterSeconds >= 1 && d.retryAfterSeconds <= limiter.policy.windowSeconds));
      // The next call of the window is refused too, and the count went on from where the burst left it.
      const after = await limiter.consume(key);
      assert.equal(after.allowed, false);
      return after;
    }

    it("lets exactly the limit through, each call counted once, whatever the store", async () => {
      const rateLimits = openRateLimits(limits, t.database);
      closers.push(() => rateLimits.close());
      const after = await burst(rateLimits.requests, "credential:concurrent");
      // PostgreSQL blocks a key over its limit in memory (no more writes); memory counts on.
      assert.equal(after.consumed, rateLimits.store === "postgres" ? 0 : 13);
    });

    onPostgresServer(() =>
      it("shares writes on PostgreSQL: one for the first call, one for those that arrived meanwhile", async function () {
        const writes: string[] = [];
        const pool = new pg.Pool({ connectionString: t.database.url, max: 2 });
        const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
        pool.query = ((...args: unknown[]) => {
          const text = typeof args[0] === "string" ? args[0] : (args[0] as { text: string }).text;
          if (/rate_limits/.test(text)) writes.push(text);
          return query(...args);
        }) as typeof pool.query;
        const rateLimits = createPostgresRateLimits(limits, pool);
        closers.push(async () => {
          await rateLimits.close();
          await pool.end();
        });
        await burst(rateLimits.signInPerIp, "ip:198.51.100.99");
        assert.equal(writes.length, 3, `writes: the first call's, the other 11 together's, the next call's (got ${writes.length})`);
        const [row] = (await pool.query<{ points: number }>(`select points from rate_limits where key = 'sign_in_ip:ip:198.51.100.99'`)).rows;
        assert.equal(row.points, 13);
      }),
    );
  });
});
