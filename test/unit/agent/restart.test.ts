import assert from "node:assert/strict";
import { createRestartPolicy } from "../../../agent/restart-policy.ts";
import { createStopper } from "../../../agent/wrap-signals.ts";

describe("wrap's restarts of a server that ended by itself", () => {
  const policy = (mode: "on-crash" | "always" | "never") => {
    let clock = 0;
    const p = createRestartPolicy({ mode, firstDelayMs: 5_000, now: () => clock });
    return { decide: p.decide, at: (ms: number) => (clock = ms) };
  };

  it("restarts a crash after 5 s doubling, and calls the fifth in ten minutes a crash loop", () => {
    const p = policy("on-crash");
    const decisions = [1, 2, 3, 4, 5].map((status, i) => (p.at(i * 60_000), p.decide(status)));
    assert.deepEqual(decisions, [
      { kind: "restart", delayMs: 5_000, ends: 1 },
      { kind: "restart", delayMs: 10_000, ends: 2 },
      { kind: "restart", delayMs: 20_000, ends: 3 },
      { kind: "restart", delayMs: 40_000, ends: 4 },
      { kind: "crash-loop", ends: 5 },
    ]);
  });

  it("counts only the ends of the last ten minutes, and caps the delay at 5 minutes", () => {
    const p = policy("always");
    for (let i = 0; i < 4; i++) p.decide(1);
    p.at(600_000);
    assert.deepEqual(p.decide(1), { kind: "restart", delayMs: 5_000, ends: 1 }, "the four before are older than ten minutes");
    const capped = createRestartPolicy({ mode: "always", firstDelayMs: 100_000, loopEnds: 10, now: () => 0 });
    assert.deepEqual(
      [1, 2, 3].map(() => capped.decide(0).kind === "restart" && capped.decide(0)),
      [
        { kind: "restart", delayMs: 200_000, ends: 2 },
        { kind: "restart", delayMs: 300_000, ends: 4 },
        { kind: "restart", delayMs: 300_000, ends: 6 },
      ],
    );
  });

  it("exits on a clean exit with on-crash, restarts it with always, and never restarts with never", () => {
    assert.deepEqual(policy("on-crash").decide(0), { kind: "exit" });
    assert.deepEqual(policy("always").decide(0), { kind: "restart", delayMs: 5_000, ends: 1 });
    assert.deepEqual(policy("never").decide(137), { kind: "exit" });
  });

  it("ends the wait for a restart on a stop signal, and takes one while no server runs as the agent's stop", async () => {
    const notes: string[] = [];
    const stop = createStopper({ running: () => false, writeLine: () => false, kill: () => {} }, 30, (m) => notes.push(m));
    assert.equal(await stop.untilRequested(10), false, "no signal: the wait ends by itself");
    const waiting = stop.untilRequested(60_000);
    stop.onSignal("SIGTERM");
    assert.equal(await waiting, true);
    assert.equal(stop.requested(), true);
    assert.deepEqual(notes, ["SIGTERM: the server is not running; stopping the agent"]);
    assert.equal(await stop.untilRequested(), true, "asked again: at once");
  });
});
