/**
 * The client's retries of Outpost's real rate limit (429 with a RetryInfo detail): a query is
 * retried after the wait Outpost asks for (capped here by maxDelayMs, so the suite does not wait
 * out a minute's window: the test ends the window itself when it sees the 429), a mutation only
 * with an idempotency key, which the client makes up itself unless told not to.
 */
import assert from "node:assert/strict";
import { createOutpostClient, OutpostError, type OutpostClientOptions } from "../src/index.ts";
import { hashSecret } from "../../../contract/secrets.ts";
import { adminApiKey } from "../../../test/support/account-oauth.ts";
import { startTestOutpost, type TestOutpost } from "../../../test/support/outpost.ts";

const limit = 20;

interface Seen {
  status: number;
  idempotencyKey: string | null;
  at: number;
}

// eslint-disable-next-line max-lines-per-function -- a suite's describe block holds its cases (as test/**/*.test.ts, exempt in eslint.config.js)
describe("@outpost/client: retries of a real rate limit", () => {
  let t: TestOutpost;
  let accounts = 0;

  before(async () => {
    t = await startTestOutpost({ RATE_LIMIT_PER_MINUTE: String(limit) });
  });
  after(async () => {
    await t?.close();
  });

  /** A new account's API key that has used up its calls for this minute. */
  async function limitedKey(): Promise<string> {
    const key = await adminApiKey(t, `burst${++accounts}@example.com`);
    const burst = await Promise.all(Array.from({ length: limit + 1 }, () => fetch(`${t.baseUrl}/api/http/auth/getSession`, { headers: { "x-api-key": key } })));
    assert.equal(burst.filter((res) => res.status === 429).length, 1);
    return key;
  }

  /**
   * A client whose fetch notes each answer; on a 429 it ends the key's window (as the minute
   * running out would), so that a retry succeeds if the client makes one.
   */
  function recordingClient(key: string, options: Partial<OutpostClientOptions> = {}) {
    const seen: Seen[] = [];
    const client = createOutpostClient({
      baseUrl: t.baseUrl,
      apiKey: key,
      ...options,
      fetch: async (input, init) => {
        const res = await fetch(input, init);
        seen.push({ status: res.status, idempotencyKey: new Headers(init?.headers).get("idempotency-key"), at: Date.now() });
        if (res.status === 429) await t.outpost.runtime.rateLimits.requests.reset(`credential:${hashSecret(key)}`);
        return res;
      },
    });
    return { client, seen };
  }

  it("retries a rate-limited query after Outpost's Retry-After, waiting at most maxDelayMs", async () => {
    const { client, seen } = recordingClient(await limitedKey(), { retry: { maxDelayMs: 300 } });
    const session = await client.auth.getSession({});
    assert.match(session.user?.email ?? "", /^burst\d+@example\.com$/);
    assert.deepEqual(
      seen.map((s) => s.status),
      [429, 200],
    );
    // Outpost asked for at least a second; the client waited its cap, no less.
    assert.ok(seen[1].at - seen[0].at >= 295, `retried after ${seen[1].at - seen[0].at} ms`);
  });

  it("does not retry a mutation without an idempotency key, and says when to try again", async () => {
    const { client, seen } = recordingClient(await limitedKey(), { retry: { maxDelayMs: 300 }, autoIdempotencyKey: false });
    const error = await client.organizations.createOrganization({ name: "Burst", slug: "burst" }).catch((e: unknown) => e);
    assert.ok(error instanceof OutpostError);
    assert.deepEqual([error.code, error.status, error.reason], ["resource_exhausted", 429, "rate_limited"]);
    assert.ok(error.retryAfterMs !== undefined && error.retryAfterMs >= 1000 && error.retryAfterMs <= 60_000, `retryAfterMs ${error.retryAfterMs}`);
    assert.deepEqual(seen, [{ status: 429, idempotencyKey: null, at: seen[0].at }]);
  });

  it("gives a mutation without a key one of its own, and retries it with that same key", async () => {
    const { client, seen } = recordingClient(await limitedKey(), { retry: { maxDelayMs: 100 } });
    const { organization } = await client.organizations.createOrganization({ name: "Auto", slug: "auto" });
    assert.equal(organization?.slug, "auto");
    assert.deepEqual(
      seen.map((s) => s.status),
      [429, 200],
    );
    assert.match(seen[0].idempotencyKey ?? "", /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.equal(seen[1].idempotencyKey, seen[0].idempotencyKey);
  });

  it("retries a mutation with the caller's key, sent as the Idempotency-Key header", async () => {
    const { client, seen } = recordingClient(await limitedKey(), { retry: { maxDelayMs: 100 } });
    await client.organizations.createOrganization({ name: "Shop", slug: "shop" }, { idempotencyKey: "purchase-42" });
    assert.deepEqual(
      seen.map((s) => [s.status, s.idempotencyKey]),
      [
        [429, "purchase-42"],
        [200, "purchase-42"],
      ],
    );
  });

  it("gives up after maxAttempts, with the last refusal", async () => {
    const key = await limitedKey();
    const seen: number[] = [];
    const client = createOutpostClient({
      baseUrl: t.baseUrl,
      apiKey: key,
      retry: { maxAttempts: 2, maxDelayMs: 50 },
      fetch: async (input, init) => {
        const res = await fetch(input, init);
        seen.push(res.status);
        return res;
      },
    });
    const error = await client.auth.getSession({}).catch((e: unknown) => e);
    assert.ok(error instanceof OutpostError && error.status === 429);
    assert.deepEqual(seen, [429, 429]);
  });
});
