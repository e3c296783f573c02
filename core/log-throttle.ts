/**
 * Warnings that strangers or a sick dependency can cause by the thousand (forged bus messages,
 * console output dropped while the database is slow) are logged at most once per period, with
 * how many were left out since, so they tell the operator without flooding the log.
 */
import type { Logger } from "pino";
import { isDatabaseUnavailable } from "./db/unavailable.ts";

/** How often one throttled warning may be logged. */
export const warnEveryMs = 60_000;

/** Warns `message` now, then at most once per `everyMs`, counting the occurrences not logged. */
export function throttledWarning(logger: Logger, message: string, everyMs = warnEveryMs): (fields?: Record<string, unknown>) => void {
  let lastAt = -Infinity;
  let skipped = 0;
  return (fields = {}) => {
    const now = Date.now();
    if (now - lastAt < everyMs) {
      skipped++;
      return;
    }
    logger.warn({ ...fields, ...(skipped > 0 && { notLoggedSince: skipped }) }, message);
    lastAt = now;
    skipped = 0;
  };
}

/** Logs one failure of a job, with the fields that say which. */
export type JobFailureLog = (error: unknown, fields?: Record<string, unknown>) => void;

/**
 * The log of a job that runs again by itself (a delivery round, the signing keys' re-read, the bus's
 * reconnect, a readiness probe): while the database cannot be reached, its failure is one warning
 * a minute (every call meanwhile is answered unavailable, and the error interceptor says so too),
 * so an outage does not fill the log; any other failure is logged each time at `level`.
 */
export function jobFailureLog(logger: Logger, message: string, level: "error" | "warn" = "error", everyMs = warnEveryMs): JobFailureLog {
  const unreachable = throttledWarning(logger, `${message}: the database cannot be reached`, everyMs);
  return (error, fields = {}) => {
    if (isDatabaseUnavailable(error)) unreachable({ ...fields, err: error });
    else logger[level]({ ...fields, err: error }, message);
  };
}
