/** The rate-limit store's own SQL: rate-limiter-flexible writes the counts, Outpost sweeps them. */
import { sql, type SqlRunner } from "../db/sql.ts";

/** Deletes the counts of windows that ended before `before` (ms since the epoch) in the table of migration 0002. */
export async function deleteExpiredCounts(query: SqlRunner, before: number): Promise<void> {
  await query.run(sql`delete from rate_limits where expire < ${before}`);
}

/** This connection's commits are acknowledged before their WAL reaches the disk (see openCountPool). */
export async function commitWithoutWaitingForDisk(query: SqlRunner): Promise<void> {
  await query.run(sql`set synchronous_commit = off`);
}
