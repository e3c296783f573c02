/**
 * One clock for every instance: the database's. Codes, tokens, sessions and claims get their
 * expiry from the instance that issues them and are checked by whichever instance is asked next,
 * so an instance whose clock runs ahead would make what it issues valid longer everywhere (and sign
 * ID tokens "issued" in the future). Each instance reads the database's time at start and every
 * minute, and its clock is its own plus the measured difference: all agree with PostgreSQL, to
 * within half a round trip.
 */
import type { Logger } from "pino";
import type { EntityManager } from "@mikro-orm/postgresql";
import type { Clock } from "../deps.ts";
import { executeOn } from "./statements.ts";
import { databaseTimeMs } from "./clock-queries.ts";

/** How often the difference is measured again (clocks drift; NTP steps them). */
export const clockSyncMs = 60_000;
/** A difference this large is worth a warning: the machine's clock is off, and its operator should know. */
const skewWarningMs = 5_000;

export interface DatabaseClock extends Clock {
  /** The database's time minus this process's, as last measured. */
  offsetMs(): number;
  /** Measures the difference again now. */
  sync(): Promise<void>;
  /** Stops measuring. */
  stop(): void;
}

export async function createDatabaseClock(em: () => EntityManager, local: Clock, logger: Logger): Promise<DatabaseClock> {
  let offset = 0;
  let warned = false;
  async function sync(): Promise<void> {
    const before = local.now().getTime();
    const database = await databaseTimeMs(executeOn(em()));
    const after = local.now().getTime();
    offset = database - (before + after) / 2;
    const skewed = Math.abs(offset) > skewWarningMs;
    if (skewed && !warned) logger.warn({ offsetMs: Math.round(offset) }, "this machine's clock differs from the database's; Outpost keeps time by the database's");
    warned = skewed;
  }
  await sync();
  const timer = setInterval(() => sync().catch((error) => logger.warn({ err: error }, "reading the database's time failed; keeping the last difference")), clockSyncMs);
  timer.unref();
  return {
    now: () => new Date(local.now().getTime() + offset),
    offsetMs: () => offset,
    sync,
    stop: () => clearInterval(timer),
  };
}
