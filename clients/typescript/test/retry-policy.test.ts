/**
 * The retry rules on their own, and the failures a real Outpost is hard to make fail on cue (an
 * outage's 503, an idempotency key whose first call still runs), as Connect answers put on the
 * wire by a stand-in fetch.
 */
import assert from "node:assert/strict";
import { create, toBinary } from "@bufbuild/protobuf";
import { createOutpostClient, OutpostError, type OutpostClientOptions } from "../src/index.ts";
import { isRetryable, retryDelayMs, retryPolicy } from "../src/retry.ts";
import { ErrorInfoSchema } from "../../../gen/outpost/errors/v1/errors_pb.js";

const policy = retryPolicy({ maxDelayMs: 5_000 });
const error = (code: string, init: { reason?: string; retryAfterMs?: number } = {}) => new OutpostError("x", { code, ...init });
const serverId = "3f1c2b4a-5d6e-4f70-8a9b-0c1d2e3f4a5b";

/** A Connect error as Outpost writes it: JSON with the details as base64 protobuf. */
function connectError(status: number, code: string, reason?: string, headers: Record<string, string> = {}): Response {
  const details = reason
    ? [
        {
          type: ErrorInfoSchema.typeName,
          value: Buffer.from(toBinary(ErrorInfoSchema, create(ErrorInfoSchema, { reason })))
            .toString("base64")
            .replace(/=+$/, ""),
        },
      ]
    : [];
  return new Response(JSON.stringify({ code, message: `${code} here`, details }), { status, headers: { "content-type": "application/json", ...headers } });
}

/** A client whose fetch gives `answers` in turn (then success), noting each request's idempotency key. */
function scripted(answers: Array<() => Response>, options: Partial<OutpostClientOptions> = {}) {
  const keys: Array<string | null> = [];
  const client = createOutpostClient({
    baseUrl: "http://outpost.invalid",
    apiKey: "opk_test",
    ...options,
    fetch: async (_input, init) => {
      keys.push(new Headers(init?.headers).get("idempotency-key"));
      const next = answers.shift();
      return next ? next() : new Response(JSON.stringify({ changed: true }), { status: 200, headers: { "content-type": "application/json" } });
    },
  });
  return { client, keys };
}

describe("@outpost/client: when to retry, and how long to wait", () => {
  it("retries queries always, mutations only with a key, and only failures that say 'not now'", () => {
    const query = { query: true, keyed: false };
    const bare = { query: false, keyed: false };
    const keyed = { query: false, keyed: true };
    assert.equal(isRetryable(error("unavailable"), query), true);
    assert.equal(isRetryable(error("unavailable"), bare), false);
    assert.equal(isRetryable(error("unavailable"), keyed), true);
    assert.equal(isRetryable(error("resource_exhausted", { reason: "rate_limited", retryAfterMs: 1000 }), query), true);
    assert.equal(isRetryable(error("resource_exhausted", { reason: "server_busy" }), query), true);
    // Too large: resource_exhausted without a wait, and never passes.
    assert.equal(isRetryable(error("resource_exhausted"), query), false);
    assert.equal(isRetryable(error("aborted", { reason: "idempotency_key_in_flight" }), keyed), true);
    assert.equal(isRetryable(error("aborted", { reason: "idempotency_key_in_flight" }), query), false);
    for (const code of ["not_found", "invalid_argument", "failed_precondition", "internal", "deadline_exceeded"])
      assert.equal(isRetryable(error(code), keyed), false, code);
  });

  it("waits what Outpost asks for up to maxDelayMs, else backs off exponentially with jitter", () => {
    assert.equal(retryDelayMs(error("unavailable", { retryAfterMs: 1200 }), 1, policy), 1200);
    assert.equal(retryDelayMs(error("resource_exhausted", { retryAfterMs: 42_000 }), 1, policy), 5_000);
    assert.deepEqual(
      [1, 2, 3].map((n) => [retryDelayMs(error("unavailable"), n, policy, () => 0), retryDelayMs(error("unavailable"), n, policy, () => 1)]),
      [
        [188, 313],
        [375, 625],
        [750, 1250],
      ],
    );
    assert.equal(
      retryDelayMs(error("unavailable"), 10, policy, () => 1),
      5_000,
    );
    assert.throws(() => retryPolicy({ maxAttempts: 0 }), RangeError);
    assert.throws(() => retryPolicy({ maxDelayMs: -1 }), RangeError);
  });
});

describe("@outpost/client: retries of failures as Connect puts them on the wire", () => {
  it("retries a 503 after its Retry-After header, and reads the status, code and header", async () => {
    const { client, keys } = scripted([() => connectError(503, "unavailable", undefined, { "retry-after": "0" })]);
    const res = await client.servers.restartServer({ serverId }, { idempotencyKey: "restart-1" });
    assert.equal(res.changed, true);
    assert.deepEqual(keys, ["restart-1", "restart-1"]);

    const once = scripted([() => connectError(503, "unavailable", undefined, { "retry-after": "0" })], { retry: { maxAttempts: 1 } });
    const failed = await once.client.servers.getServer({ serverId }).catch((e: unknown) => e);
    assert.ok(failed instanceof OutpostError);
    assert.deepEqual([failed.code, failed.status, failed.retryAfterMs], ["unavailable", 503, 0]);
    // Retries off: a mutation gets no key of the client's making.
    await once.client.servers.restartServer({ serverId });
    assert.deepEqual(once.keys, [null, null]);
  });

  it("retries a keyed call whose first run is still in flight (409), and reads a 422 for a key reused", async () => {
    const inFlight = () => connectError(409, "aborted", "idempotency_key_in_flight");
    const { client, keys } = scripted([inFlight]);
    await client.servers.restartServer({ serverId });
    assert.equal(keys.length, 2);
    assert.ok(keys[0] && keys[0] === keys[1]);

    const unkeyed = scripted([inFlight], { autoIdempotencyKey: false });
    const refused = await unkeyed.client.servers.restartServer({ serverId }).catch((e: unknown) => e);
    assert.ok(refused instanceof OutpostError);
    assert.deepEqual([refused.code, refused.status, refused.reason], ["aborted", 409, "idempotency_key_in_flight"]);

    const reused = scripted([() => connectError(400, "invalid_argument", "idempotency_key_reused")]);
    const wrong = await reused.client.servers.restartServer({ serverId }, { idempotencyKey: "k" }).catch((e: unknown) => e);
    assert.ok(wrong instanceof OutpostError);
    assert.deepEqual([wrong.code, wrong.status, wrong.reason], ["invalid_argument", 422, "idempotency_key_reused"]);

    // A key fetch cannot send fails before any request, as the caller's invalid argument.
    const unsendable = scripted([]);
    const bad = await unsendable.client.servers.restartServer({ serverId }, { idempotencyKey: "☃" }).catch((e: unknown) => e);
    assert.ok(bad instanceof OutpostError);
    assert.deepEqual([bad.code, bad.status, unsendable.keys.length], ["invalid_argument", 400, 0]);
  });

  it("fails at once when the wait would pass the caller's timeout, and stops waiting when aborted", async () => {
    const slow = () => connectError(503, "unavailable", undefined, { "retry-after": "5" });
    const started = Date.now();
    const timedOut = await scripted([slow])
      .client.servers.getServer({ serverId }, { timeoutMs: 1_000 })
      .catch((e: unknown) => e);
    assert.ok(timedOut instanceof OutpostError && timedOut.code === "unavailable");
    const abort = new AbortController();
    setTimeout(() => abort.abort(), 50);
    const canceled = await scripted([slow])
      .client.servers.getServer({ serverId }, { signal: abort.signal })
      .catch((e: unknown) => e);
    assert.ok(canceled instanceof OutpostError && canceled.code === "canceled");
    assert.ok(Date.now() - started < 1_000, `took ${Date.now() - started} ms`);
  });
});
