import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { pino } from "pino";
import { AuthService } from "../../gen/outpost/auth/v1/auth_service_pb.js";
import { ErrorInfoSchema, RetryInfoSchema } from "../../gen/outpost/errors/v1/errors_pb.js";
import { clientIpHeader } from "../../contract/credentials.ts";
import { clientIpKey } from "../../core/ratelimit/client-ip.ts";
import { rateLimitHeaders } from "../../edge/errors.ts";
import { ConfigError, loadConfig } from "../../server/config.ts";
import { openRuntime } from "../../server/runtime.ts";
import { createTestDatabase, onPostgresServer } from "../support/database.ts";

const silent = pino({ level: "silent" });

describe("rate limits: configuration, store choice and HTTP headers", () => {
  describe("configuration", () => {
    it("defaults to 600 calls a minute; failed sign-ins: 10 per account and IP and 50 per IP in 15 minutes, 100 per account an hour; 10 sign-ups per IP an hour", () => {
      assert.deepEqual(loadConfig({}).rateLimits, {
        requestsPerWindow: 600,
        requestWindowSeconds: 60,
        signInAttemptsPerAccountIp: 10,
        signInAttemptsPerIp: 50,
        signInWindowSeconds: 900,
        signInAttemptsPerAccount: 100,
        signInAccountWindowSeconds: 3600,
        signUpsPerIp: 10,
        signUpWindowSeconds: 3600,
      });
    });

    it("reads the variables and refuses bad values with a clear message", () => {
      const config = loadConfig({
        RATE_LIMIT_PER_MINUTE: "120",
        SIGN_IN_ATTEMPTS_PER_ACCOUNT_IP_PER_15_MIN: "5",
        SIGN_IN_ATTEMPTS_PER_IP_PER_15_MIN: "20",
        SIGN_IN_ATTEMPTS_PER_ACCOUNT_PER_HOUR: "40",
        SIGN_UPS_PER_IP_PER_HOUR: "3",
      });
      const { requestsPerWindow, signInAttemptsPerAccountIp, signInAttemptsPerIp, signInAttemptsPerAccount, signUpsPerIp } = config.rateLimits;
      assert.deepEqual([requestsPerWindow, signInAttemptsPerAccountIp, signInAttemptsPerIp, signInAttemptsPerAccount, signUpsPerIp], [120, 5, 20, 40, 3]);
      const refuses: Array<[Record<string, string>, RegExp]> = [
        [{ RATE_LIMIT_PER_MINUTE: "0" }, /^RATE_LIMIT_PER_MINUTE must be a whole number from 1 to 1000000 \(got "0"\)$/],
        [{ SIGN_IN_ATTEMPTS_PER_ACCOUNT_IP_PER_15_MIN: "ten" }, /^SIGN_IN_ATTEMPTS_PER_ACCOUNT_IP_PER_15_MIN must be a whole number/],
        [{ SIGN_IN_ATTEMPTS_PER_15_MIN: "ten" }, /^SIGN_IN_ATTEMPTS_PER_15_MIN must be a whole number/],
        [
          { SIGN_IN_ATTEMPTS_PER_15_MIN: "5", SIGN_IN_ATTEMPTS_PER_ACCOUNT_IP_PER_15_MIN: "5" },
          /^set SIGN_IN_ATTEMPTS_PER_ACCOUNT_IP_PER_15_MIN only: SIGN_IN_ATTEMPTS_PER_15_MIN is its old name/,
        ],
        [{ SIGN_IN_ATTEMPTS_PER_IP_PER_15_MIN: "-1" }, /^SIGN_IN_ATTEMPTS_PER_IP_PER_15_MIN must be a whole number/],
        [{ SIGN_IN_ATTEMPTS_PER_ACCOUNT_PER_HOUR: "0" }, /^SIGN_IN_ATTEMPTS_PER_ACCOUNT_PER_HOUR must be a whole number from 1 to 100000/],
        [{ SIGN_UPS_PER_IP_PER_HOUR: "1.5" }, /^SIGN_UPS_PER_IP_PER_HOUR must be a whole number from 1 to 100000/],
      ];
      for (const [env, message] of refuses) {
        assert.throws(
          () => loadConfig(env),
          (error: unknown) => error instanceof ConfigError && message.test(error.message),
        );
      }
    });

    it("still reads SIGN_IN_ATTEMPTS_PER_15_MIN, the old name of the per account and IP limit", () => {
      assert.equal(loadConfig({ SIGN_IN_ATTEMPTS_PER_15_MIN: "4" }).rateLimits.signInAttemptsPerAccountIp, 4);
    });
  });

  describe("the composition root's choice of store", () => {
    it("counts in memory on the embedded database", async () => {
      const dataDir = mkdtempSync(join(tmpdir(), "outpost-ratelimit-"));
      try {
        const runtime = await openRuntime(loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: "silent" }), silent, "serve");
        try {
          assert.equal(runtime.database.kind, "embedded");
          assert.equal(runtime.rateLimits.store, "memory");
        } finally {
          await runtime.close();
        }
      } finally {
        rmSync(dataDir, { recursive: true, force: true });
      }
    });

    onPostgresServer(() =>
      it("counts in the rate_limits table on a PostgreSQL server, which the migration made", async function () {
        const database = await createTestDatabase();
        try {
          const runtime = await openRuntime(loadConfig({ DATABASE_URL: database.url, LOG_LEVEL: "silent" }), silent, "serve");
          try {
            assert.equal(runtime.rateLimits.store, "postgres");
            const auth = createClient(AuthService, runtime.core.transport([(next) => (req) => (req.header.set(clientIpHeader, "192.0.2.1"), next(req))]));
            await assert.rejects(auth.getSession({}), (e: unknown) => ConnectError.from(e).code === Code.Unauthenticated);
            const sql = runtime.orm.em.fork().getConnection();
            assert.deepEqual(await sql.execute(`select key, points from rate_limits`), [{ key: "default:ip:192.0.2.1", points: 1 }]);
            const columns = await sql.execute(`select column_name, data_type from information_schema.columns where table_name = 'rate_limits' order by ordinal_position`);
            assert.deepEqual(
              columns.map((c) => `${c.column_name} ${c.data_type}`),
              ["key character varying", "points integer", "expire bigint"],
            );
            // The library was told the table exists: it made none of its own.
            const tables = await sql.execute(`select table_name from information_schema.tables where table_schema = 'public' order by 1`);
            assert.deepEqual(
              tables.map((r) => String(r.table_name)).filter((n) => /rate|rlflx|default|sign_in/.test(n)),
              ["rate_limits"],
            );
          } finally {
            await runtime.close();
          }
        } finally {
          await database.drop();
        }
      }),
    );
  });

  describe("client addresses", () => {
    it("keys IPv4 as it is, IPv4-mapped IPv6 as IPv4, IPv6 by its /64, and nothing else", () => {
      assert.equal(clientIpKey("203.0.113.9"), "203.0.113.9");
      assert.equal(clientIpKey("::ffff:203.0.113.9"), "203.0.113.9");
      assert.equal(clientIpKey("2001:db8::1"), "2001:0db8:0000:0000::/64");
      assert.equal(clientIpKey("2001:DB8:0:0:abcd::1"), "2001:0db8:0000:0000::/64");
      assert.equal(clientIpKey("::1"), "0000:0000:0000:0000::/64");
      for (const bad of ["", undefined, null, "localhost", "1.2.3", "203.0.113.9, 10.0.0.1"]) assert.equal(clientIpKey(bad), undefined);
    });
  });

  describe("rateLimitHeaders", () => {
    const limited = (retryAfterSeconds: number, policy = "default") =>
      new ConnectError("too many requests", Code.ResourceExhausted, undefined, [
        { desc: ErrorInfoSchema, value: create(ErrorInfoSchema, { reason: "rate_limited" }) },
        { desc: RetryInfoSchema, value: create(RetryInfoSchema, { retryAfterSeconds, limit: 600, windowSeconds: 60, policy }) },
      ]);

    it("gives Retry-After and the draft's RateLimit-Policy and RateLimit fields", () => {
      assert.deepEqual(rateLimitHeaders(limited(42)), {
        "Retry-After": "42",
        "RateLimit-Policy": '"default";q=600;w=60',
        RateLimit: '"default";r=0;t=42',
      });
    });

    it("never says less than one second, and quotes the policy name as a structured-field string", () => {
      const headers = rateLimitHeaders(limited(0, 'odd"name'))!;
      assert.equal(headers["Retry-After"], "1");
      assert.equal(headers["RateLimit"], '"odd\\"name";r=0;t=1');
    });

    it("reads the detail from an error that crossed the wire (type name and bytes)", () => {
      const incoming = new ConnectError("too many requests", Code.ResourceExhausted);
      const retry = create(RetryInfoSchema, { retryAfterSeconds: 7, limit: 10, windowSeconds: 900, policy: "sign_in_account" });
      incoming.details.push({ type: RetryInfoSchema.typeName, value: toBinary(RetryInfoSchema, retry) });
      assert.deepEqual(rateLimitHeaders(incoming), {
        "Retry-After": "7",
        "RateLimit-Policy": '"sign_in_account";q=10;w=900',
        RateLimit: '"sign_in_account";r=0;t=7',
      });
    });

    it("is undefined for other errors", () => {
      assert.equal(rateLimitHeaders(new ConnectError("nope", Code.Unauthenticated)), undefined);
      assert.equal(rateLimitHeaders(new ConnectError("busy", Code.ResourceExhausted)), undefined);
      assert.equal(rateLimitHeaders(new Error("boom")), undefined);
    });
  });
});
