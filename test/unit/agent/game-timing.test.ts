import assert from "node:assert/strict";
import { createGameTiming, isTimingAnswer, readMspt, readTps } from "../../../agent/game-timing.ts";

/** What a Paper, Spigot and vanilla console print for `tps` and `mspt` (plain text, as the agent reads it). */
const paperTps = "[12:00:00 INFO]: TPS from last 1m, 5m, 15m: 19.5, *20.0, 20.0";
const paperMspt = ["[12:00:00 INFO]: Server tick times (avg/min/max) from last 5s, 10s, 1m:", "[12:00:00 INFO]: ◴ 2.1/0.9/8.0, 2.0/0.8/8.1, 3.25/0.7/12.5"];
const unknown = ["[12:00:00] [Server thread/INFO]: Unknown or incomplete command, see below for error", "[12:00:00] [Server thread/INFO]: tps<--[HERE]"];

describe("unit: a wrapped server's TPS and MSPT", () => {
  it("reads the 1-minute figures of Paper's answers, and knows its lines (and a refusal) as the answers", () => {
    assert.equal(readTps([paperTps]), 19.5);
    assert.equal(readTps(["[12:00:00 INFO]: TPS from last 1m, 5m, 15m: *20.0, 20.0, 20.0"]), 20);
    assert.equal(readMspt(paperMspt), 3.25, "the last triple is the last minute's; its first the average");
    assert.equal(readTps(unknown), undefined);
    assert.equal(readMspt(["[12:00:00 INFO]: ◴ 2.1/0.9/8.0, 2.0/0.8/8.1, 3.25/0.7/12.5"]), undefined, "not without its heading");
    for (const line of [paperTps, ...paperMspt, ...unknown]) assert.ok(isTimingAnswer(line), line);
    assert.ok(!isTimingAnswer("[12:00:00 INFO]: Steve joined the game"));
  });

  it("asks once a minute while the server runs, gives the figures while fresh, and stops asking a server that knows no tps", async () => {
    let time = 0;
    let group: number | undefined = 100;
    const asked: string[] = [];
    let answers: Record<string, string[]> = { tps: [paperTps], mspt: paperMspt };
    const timing = createGameTiming({
      probe: async (command) => (asked.push(command), { success: true, output: answers[command] ?? [] }),
      runningGroup: () => group,
      now: () => time,
      everyMs: 60_000,
    });
    const settle = () => new Promise((r) => setImmediate(r));
    assert.deepEqual(timing.sample(), {}, "nothing known yet: asked now");
    await settle();
    assert.deepEqual(asked, ["tps", "mspt"]);
    time = 10_000;
    assert.deepEqual(timing.sample(), { tps: 19.5, mspt: 3.25 });
    assert.deepEqual(asked, ["tps", "mspt"], "not again within the minute");
    time = 61_000;
    timing.sample();
    await settle();
    assert.equal(asked.length, 4, "again after a minute");
    group = undefined;
    assert.deepEqual(timing.sample(), {}, "nothing while stopped");

    // A vanilla server (new process): refuses tps once, and is not asked again.
    group = 200;
    answers = { tps: unknown, mspt: unknown };
    time = 200_000;
    assert.deepEqual(timing.sample(), {}, "the figures of another process are not its");
    await settle();
    time = 400_000;
    timing.sample();
    await settle();
    assert.deepEqual(asked.slice(4), ["tps"]);

    // A Spigot server: TPS, and no mspt after the first refusal.
    group = 300;
    answers = { tps: [paperTps], mspt: unknown };
    time = 500_000;
    timing.sample();
    await settle();
    time = 570_000;
    assert.deepEqual(timing.sample(), { tps: 19.5 });
    await settle();
    assert.deepEqual(asked.slice(5), ["tps", "mspt", "tps"]);
    time = 700_000;
    assert.deepEqual(timing.sample(), {}, "stale after a minute and a half");
  });
});
