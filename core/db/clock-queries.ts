import { sql, type SqlRunner } from "./sql.ts";
import { float, row } from "./rows.ts";

/** The database server's time now, in milliseconds since the epoch (its clock, not the transaction's). */
export async function databaseTimeMs(query: SqlRunner): Promise<number> {
  const now = await query.one(sql`select (extract(epoch from clock_timestamp()) * 1000)::float8 as ms`, row({ ms: float }));
  return now!.ms;
}
