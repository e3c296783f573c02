/** The rate-limit store's own SQL: rate-limiter-flexible writes the counts, Outpost sweeps them. */
import type pg from "pg";

/** Deletes the counts of windows that ended before `before` (ms since the epoch) in the table of migration 0002. */
export async function deleteExpiredCounts(pool: pg.Pool, before: number): Promise<void> {
  await pool.query(`delete from rate_limits where expire < $1`, [before]);
}
