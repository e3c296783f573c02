import type { Query } from "./statements.ts";

/** The database server's time now, in milliseconds since the epoch (its clock, not the transaction's). */
export async function databaseTimeMs(query: Query): Promise<number> {
  const [row] = await query<{ ms: number }>(`select (extract(epoch from clock_timestamp()) * 1000)::float8 as ms`, []);
  return Number(row.ms);
}
