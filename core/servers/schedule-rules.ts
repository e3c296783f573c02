/**
 * A schedule's times as plain rules: its cron expression (five fields, read by croner) in its IANA
 * time zone, the runs after a moment, the warnings before a run, and what to do with a run that
 * was missed while no instance was up (run it late within the grace period, else skip it).
 */
import { Cron } from "croner";
import { fieldFail, type FieldProblem } from "../errors.ts";

/** A schedule's stored actions. */
export const scheduleActions = ["restart", "stop", "start", "command", "broadcast"] as const;
export type ScheduleActionName = (typeof scheduleActions)[number];

/** The fields that decide a schedule's times and doings, as a request gives them. */
export interface ScheduleTerms {
  name: string;
  cron: string;
  timeZone: string;
  action: ScheduleActionName;
  text: string;
  warningMinutes: number[];
  enabled: boolean;
}

/** Whether the zone is one the runtime knows (an IANA name, or UTC). */
function knownZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat("en", { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/** The cron expression as croner reads it, in its zone; throws what is wrong in words. */
function cronOf(cron: string, timeZone: string): Cron {
  return new Cron(cron, { timezone: timeZone, paused: true, domAndDow: false });
}

/** The terms checked and tidied: one space between fields, warnings largest first without repeats; throws invalid_argument with each problem. */
export function checkTerms(terms: ScheduleTerms): ScheduleTerms {
  const problems: FieldProblem[] = [];
  const cron = terms.cron.trim().split(/\s+/).join(" ");
  const zoneKnown = knownZone(terms.timeZone);
  if (!zoneKnown)
    problems.push({ field: "time_zone", message: `"${terms.timeZone}" is not a time zone this server knows; use an IANA name such as "Europe/Berlin" or "UTC"` });
  if (cron.split(" ").length !== 5) {
    problems.push({ field: "cron", message: 'must have five fields: minute hour day-of-month month day-of-week, e.g. "0 4 * * *"' });
  } else {
    try {
      if (!cronOf(cron, zoneKnown ? terms.timeZone : "UTC").nextRun()) problems.push({ field: "cron", message: "never runs" });
    } catch (error) {
      problems.push({ field: "cron", message: `is not a cron expression: ${(error as Error).message.replace(/^CronPattern: /, "")}` });
    }
  }
  const text = terms.text.trim();
  if ((terms.action === "command" || terms.action === "broadcast") && !(terms.action === "command" ? consoleText(text) : text).trim()) {
    problems.push({ field: "text", message: terms.action === "command" ? "the command to run is needed" : "the message to broadcast is needed" });
  }
  if (problems.length) throw fieldFail(problems);
  const warns = terms.action === "restart" || terms.action === "stop";
  const warningMinutes = warns ? [...new Set(terms.warningMinutes)].sort((a, b) => b - a) : [];
  return { ...terms, name: terms.name.trim(), cron, text: terms.action === "command" || terms.action === "broadcast" ? text : "", warningMinutes };
}

/** A command as the console takes it: one leading "/" dropped (as servers/executeConsoleCommand does). */
export const consoleText = (command: string) => (command.startsWith("/") ? command.slice(1) : command);

/** The next `n` times strictly after `after`. */
export function nextRuns(terms: Pick<ScheduleTerms, "cron" | "timeZone">, after: Date, n: number): Date[] {
  return cronOf(terms.cron, terms.timeZone).nextRuns(n, after);
}

/** The next time strictly after `after`, or null if none. */
export function nextRun(terms: Pick<ScheduleTerms, "cron" | "timeZone">, after: Date): Date | null {
  return cronOf(terms.cron, terms.timeZone).nextRun(after);
}

/** The latest time at or before `at`. */
export function latestRun(terms: Pick<ScheduleTerms, "cron" | "timeZone">, at: Date): Date | undefined {
  return cronOf(terms.cron, terms.timeZone).previousRuns(1, new Date(at.getTime() + 1))[0];
}

/** The warning due now for the run at `due`, if any: the smallest not yet sent whose time has come. */
export function dueWarning(warningMinutes: readonly number[], warnedMinutes: number | null, due: Date, now: Date): number | undefined {
  const minutesLeft = (due.getTime() - now.getTime()) / 60_000;
  const unsent = warningMinutes.filter((w) => (warnedMinutes === null || w < warnedMinutes) && w >= minutesLeft);
  return unsent.length ? Math.min(...unsent) : undefined;
}

/**
 * What to do about a run due at `due`, now: run it (on time, or late within `graceMs` — then the
 * latest time missed, any before it skipped), or skip it (later than the grace period). The next
 * time follows the last one dealt with.
 */
export function settleDue(
  terms: Pick<ScheduleTerms, "cron" | "timeZone">,
  due: Date,
  now: Date,
  graceMs: number,
): { run?: Date; skipped?: { first: Date; count: number }; next: Date | null } {
  const latest = latestRun(terms, now) ?? due;
  const last = latest < due ? due : latest;
  const missedBefore = last > due ? countRuns(terms, due, last) : 0;
  const skippedFirst = missedBefore ? { first: due, count: missedBefore } : undefined;
  if (now.getTime() - last.getTime() <= graceMs) return { run: last, skipped: skippedFirst, next: nextRun(terms, last) };
  return { skipped: { first: due, count: missedBefore + 1 }, next: nextRun(terms, now) };
}

/** How many times from `from` (included) to `to` (excluded), counting at most 1,000 (one cron read, stepped). */
function countRuns(terms: Pick<ScheduleTerms, "cron" | "timeZone">, from: Date, to: Date): number {
  const cron = cronOf(terms.cron, terms.timeZone);
  let count = 0;
  for (let at: Date | null = from; at && at < to && count < 1_000; at = cron.nextRun(at)) count++;
  return count;
}
