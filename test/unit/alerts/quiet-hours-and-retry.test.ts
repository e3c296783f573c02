import assert from "node:assert/strict";
import { isTimeZone, quietUntil } from "../../../core/alerts/quiet-hours.ts";
import { defaultRetryPolicy, verdict } from "../../../core/alerts/retry.ts";

/** The two pure rules of the worker, at fixed instants: quiet windows in a time zone, and the retry schedule. */
describe("alerts: quiet hours and retries", () => {
  const paris = { start: "22:00", end: "07:00", timeZone: "Europe/Paris" };

  it("holds until the end of a window that spans midnight, in the rule's time zone", () => {
    // 23:30 UTC in January is 00:30 in Paris: inside, and the window ends at 07:00 Paris = 06:00 UTC.
    assert.equal(quietUntil(paris, new Date("2026-01-15T23:30:00Z"))?.toISOString(), "2026-01-16T06:00:00.000Z");
    // 21:30 UTC is 22:30 in Paris: inside; the end is the next morning.
    assert.equal(quietUntil(paris, new Date("2026-01-15T21:30:00Z"))?.toISOString(), "2026-01-16T06:00:00.000Z");
    assert.equal(quietUntil(paris, new Date("2026-01-15T12:00:00Z")), undefined, "13:00 in Paris is outside");
    assert.equal(quietUntil(paris, new Date("2026-01-16T06:00:00Z")), undefined, "the end itself is outside");
  });

  it("holds within a same-day window and not outside it", () => {
    const lunch = { start: "12:00", end: "13:30", timeZone: "UTC" };
    assert.equal(quietUntil(lunch, new Date("2026-03-02T12:15:30Z"))?.toISOString(), "2026-03-02T13:30:00.000Z");
    assert.equal(quietUntil(lunch, new Date("2026-03-02T11:59:59Z")), undefined);
    assert.equal(quietUntil(lunch, new Date("2026-03-02T13:30:00Z")), undefined);
  });

  it("knows IANA time zones from anything else", () => {
    assert.ok(isTimeZone("Europe/Paris") && isTimeZone("UTC") && isTimeZone("America/Argentina/Buenos_Aires"));
    assert.ok(!isTimeZone("Mars/Olympus"));
    assert.ok(!isTimeZone("Europe/Nowhere"));
  });

  it("backs off exponentially with full jitter up to an hour, honours Retry-After, gives up after 24 h or at once", () => {
    const created = new Date("2026-01-01T00:00:00Z");
    const at = (ms: number) => new Date(created.getTime() + ms);
    const fail = { ok: false, retryable: true };
    const top = { ...defaultRetryPolicy, random: () => 0.999999 };
    const ceilings = [1, 2, 3, 4, 5, 6, 7, 8, 9].map((n) => verdict(top, fail, n, created, created).at.getTime() - created.getTime());
    assert.deepEqual(
      ceilings.map((ms) => Math.round(ms / 1000)),
      [30, 60, 120, 240, 480, 960, 1920, 3600, 3600],
    );
    const none = { ...defaultRetryPolicy, random: () => 0 };
    assert.equal(verdict(none, fail, 3, created, created).at.getTime(), created.getTime(), "full jitter: anywhere from now");
    assert.equal(verdict(none, { ...fail, retryAfterSeconds: 120 }, 1, created, created).at.getTime(), at(120_000).getTime());
    assert.equal(verdict(top, fail, 5, created, at(23.99 * 3_600_000)).status, "failed", "a try past 24 h is not made");
    assert.equal(verdict(top, fail, 5, created, at(3_600_000)).status, "pending");
    assert.equal(verdict(top, { ok: false, retryable: false }, 1, created, created).status, "failed");
    assert.equal(verdict(top, { ok: true, retryable: false }, 1, created, created).status, "delivered");
  });
});
