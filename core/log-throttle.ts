/**
 * Warnings that strangers or a sick dependency can cause by the thousand (forged bus messages,
 * console output dropped while the database is slow) are logged at most once per period, with
 * how many were left out since, so they tell the operator without flooding the log.
 */
import type { Logger } from "pino";

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
