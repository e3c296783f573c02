/**
 * Core's notion of now: what core's deps carry as `clock`, so that tests move time by hand and
 * every instance follows the database's clock (core/db/database-clock.ts). Its own module, below
 * the others: the modules core's dependencies are built from take a clock, and core/deps.ts
 * imports their types, so the clock cannot live in deps.ts without a ring.
 */
export interface Clock {
  now(): Date;
}

/** The process's own clock, where no database keeps the time (one-off tools, tests). */
export const systemClock: Clock = { now: () => new Date() };
