/**
 * Warnings logged at most once per interval (core/log-throttle.ts), with how many were left out
 * since. The rule reads the time from Date.now() and takes no clock, so the test sets Date.now
 * for the span of each (synchronous) test and puts it back: no waiting in real time.
 */
import assert from "node:assert/strict";
import { pino } from "pino";
import { jobFailureLog, throttledWarning, warnEveryMs } from "../../../core/log-throttle.ts";

/** A logger whose records the test reads back, as the JSON objects pino writes. */
function recordingLogger() {
  const records: Array<Record<string, unknown>> = [];
  const logger = pino({ level: "info" }, { write: (line: string) => void records.push(JSON.parse(line)) });
  return { logger, records };
}

/** Runs `body` with Date.now() reading `clock.now`, which the body moves. */
function withClock(body: (clock: { now: number }) => void) {
  const clock = { now: Date.UTC(2026, 2, 1) };
  const realNow = Date.now;
  Date.now = () => clock.now;
  try {
    body(clock);
  } finally {
    Date.now = realNow;
  }
}

/** The fields of a record that the rule shapes (pino's own pid, hostname and time left out). */
const shaped = ({ level, msg, ...rest }: Record<string, unknown>) => {
  const { pid: _pid, hostname: _hostname, time: _time, ...fields } = rest;
  return { level, msg, ...fields };
};

describe("unit: a throttled warning", () => {
  it("warns at once the first time, with the caller's fields", () => {
    withClock(() => {
      const { logger, records } = recordingLogger();
      throttledWarning(logger, "a bus message failed its check")({ topic: "console:s1" });
      assert.deepEqual(records.map(shaped), [{ level: 40, msg: "a bus message failed its check", topic: "console:s1" }]);
    });
  });

  it("leaves out the warnings within the interval, and the next one after it says how many", () => {
    withClock((clock) => {
      const { logger, records } = recordingLogger();
      const warn = throttledWarning(logger, "console output dropped", 10_000);
      warn({ serverId: "s1" });
      clock.now += 1;
      warn({ serverId: "s2" });
      clock.now += 9_998;
      warn({ serverId: "s3" });
      assert.equal(records.length, 1, "within 10 s of the first: left out");
      clock.now += 1;
      warn({ serverId: "s4" });
      assert.deepEqual(records.map(shaped).slice(1), [{ level: 40, msg: "console output dropped", serverId: "s4", notLoggedSince: 2 }]);
    });
  });

  it("counts afresh after each warning it logs, and says nothing of a quiet interval", () => {
    withClock((clock) => {
      const { logger, records } = recordingLogger();
      const warn = throttledWarning(logger, "forged", 1_000);
      warn();
      clock.now += 500;
      warn();
      clock.now += 500;
      warn();
      clock.now += 5_000;
      warn();
      assert.deepEqual(
        records.map((r) => r.notLoggedSince),
        [undefined, 1, undefined],
        "the third says one was left out; the fourth, after a quiet spell, says nothing",
      );
    });
  });

  it("waits a minute unless told otherwise, and keeps each warning's count apart", () => {
    assert.equal(warnEveryMs, 60_000);
    withClock((clock) => {
      const { logger, records } = recordingLogger();
      const forged = throttledWarning(logger, "forged");
      const dropped = throttledWarning(logger, "dropped");
      forged();
      dropped();
      forged();
      clock.now += warnEveryMs - 1;
      dropped();
      assert.deepEqual(
        records.map((r) => r.msg),
        ["forged", "dropped"],
      );
      clock.now += 1;
      forged();
      dropped();
      assert.deepEqual(
        records.slice(2).map((r) => [r.msg, r.notLoggedSince]),
        [
          ["forged", 1],
          ["dropped", 1],
        ],
      );
    });
  });
});

describe("unit: a job's failure log", () => {
  /** What pg says when PostgreSQL is not there, and a failure of another kind. */
  const refused = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" });
  const broken = new TypeError("cannot read properties of undefined");

  it("logs a failure to reach the database once a minute as a warning, whatever the job's level", () => {
    withClock((clock) => {
      const { logger, records } = recordingLogger();
      const failed = jobFailureLog(logger, "an alert delivery round failed");
      // A round every second for ten seconds of outage: one line.
      for (let i = 0; i < 10; i++, clock.now += 1_000) failed(refused);
      assert.deepEqual(
        records.map((r) => [r.level, r.msg]),
        [[40, "an alert delivery round failed: the database cannot be reached"]],
      );
      clock.now += warnEveryMs;
      failed(refused, { failures: 3 });
      assert.deepEqual(
        records.slice(1).map((r) => [r.msg, r.notLoggedSince, r.failures]),
        [["an alert delivery round failed: the database cannot be reached", 9, 3]],
      );
    });
  });

  it("logs any other failure each time, at the job's level, with its error", () => {
    withClock(() => {
      const { logger, records } = recordingLogger();
      const failed = jobFailureLog(logger, "an alert delivery round failed");
      const warned = jobFailureLog(logger, "re-reading the signing keys failed", "warn");
      failed(broken);
      failed(broken);
      warned(broken);
      assert.deepEqual(
        records.map((r) => [r.level, r.msg, (r.err as { message: string }).message]),
        [
          [50, "an alert delivery round failed", broken.message],
          [50, "an alert delivery round failed", broken.message],
          [40, "re-reading the signing keys failed", broken.message],
        ],
      );
    });
  });
});
