/** A schedule's times as plain rules (core/servers/schedule-rules.ts): zones, warnings, missed runs. */
import assert from "node:assert/strict";
import { checkTerms, dueWarning, nextRuns, settleDue, type ScheduleTerms } from "../../../core/servers/schedule-rules.ts";
import { DomainError } from "../../../core/errors.ts";

const at = (iso: string) => new Date(iso);
const minute = 60_000;

describe("unit: schedule rules", () => {
  const terms: ScheduleTerms = {
    name: " Nightly ",
    cron: " 0  4 * * * ",
    timeZone: "Europe/Berlin",
    action: "restart",
    text: "ignored",
    warningMinutes: [1, 10, 5, 5],
    enabled: true,
  };

  it("tidies the terms: one space between fields, warnings largest first and once, no text for a restart, a command kept as typed", () => {
    assert.deepEqual(checkTerms(terms), { ...terms, name: "Nightly", cron: "0 4 * * *", text: "", warningMinutes: [10, 5, 1] });
    // Its one leading slash is dropped when it runs, as the console does; kept, an edit sends it back unchanged.
    assert.deepEqual(checkTerms({ ...terms, action: "command", text: "//wand" }).text, "//wand");
    assert.deepEqual(checkTerms({ ...terms, action: "broadcast", text: "hi" }).warningMinutes, [], "warnings are for a restart or stop");
  });

  it("refuses six fields, an unknown zone, a field out of range and a command without text, each by field", () => {
    const problems = (t: Partial<ScheduleTerms>) => {
      try {
        checkTerms({ ...terms, ...t });
      } catch (error) {
        return (error as DomainError).message;
      }
      return "";
    };
    assert.match(problems({ cron: "0 0 4 * * *" }), /five fields/);
    assert.match(problems({ timeZone: "Europe/Atlantis" }), /not a time zone/);
    assert.match(problems({ cron: "0 25 * * *" }), /not a cron expression/);
    assert.match(problems({ action: "command", text: "  " }), /the command to run is needed/);
    assert.match(problems({ action: "command", text: "/" }), /the command to run is needed/, "a slash alone is no command");
    assert.equal(problems({}), "");
  });

  it("reads the expression in its zone, across a change of daylight saving time", () => {
    // Berlin leaves summer time on 2026-10-25: 04:00 is 02:00 UTC before, 03:00 UTC after.
    assert.deepEqual(
      nextRuns({ cron: "0 4 * * *", timeZone: "Europe/Berlin" }, at("2026-10-23T12:00:00Z"), 3).map((d) => d.toISOString()),
      ["2026-10-24T02:00:00.000Z", "2026-10-25T03:00:00.000Z", "2026-10-26T03:00:00.000Z"],
    );
  });

  it("says which warning is due: the smallest unsent whose time has come, each once", () => {
    const due = at("2026-11-29T04:00:00Z");
    const before = (m: number) => new Date(due.getTime() - m * minute);
    assert.equal(dueWarning([10, 5, 1], null, due, before(11)), undefined);
    assert.equal(dueWarning([10, 5, 1], null, due, before(9.5)), 10);
    assert.equal(dueWarning([10, 5, 1], 10, due, before(9)), undefined);
    assert.equal(dueWarning([10, 5, 1], 10, due, before(4)), 5);
    assert.equal(dueWarning([10, 5, 1], null, due, before(3)), 5, "coming late, the warnings passed are one");
    assert.equal(dueWarning([10, 5, 1], 1, due, before(0.5)), undefined);
  });

  it("runs a missed time once, late, within the grace period; skips it beyond; counts the times before", () => {
    const hourly = { cron: "0 * * * *", timeZone: "UTC" };
    const grace = 10 * minute;
    assert.deepEqual(settleDue(hourly, at("2026-11-29T04:00:00Z"), at("2026-11-29T04:00:03Z"), grace), {
      run: at("2026-11-29T04:00:00Z"),
      skipped: undefined,
      next: at("2026-11-29T05:00:00Z"),
    });
    assert.deepEqual(settleDue(hourly, at("2026-11-29T01:00:00Z"), at("2026-11-29T04:05:00Z"), grace), {
      run: at("2026-11-29T04:00:00Z"),
      skipped: { first: at("2026-11-29T01:00:00Z"), count: 3 },
      next: at("2026-11-29T05:00:00Z"),
    });
    assert.deepEqual(settleDue(hourly, at("2026-11-29T04:00:00Z"), at("2026-11-29T04:30:00Z"), grace), {
      skipped: { first: at("2026-11-29T04:00:00Z"), count: 1 },
      next: at("2026-11-29T05:00:00Z"),
    });
  });
});
