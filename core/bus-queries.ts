/**
 * The bus's SQL, on its one LISTEN connection (core/bus-connection.ts, run by `onConnection`):
 * listening, the idle check, and a message sent.
 */
import { sql, type SqlRunner } from "./db/sql.ts";

/** The NOTIFY channel of the bus; {@link listenToBus} names it in its text, a channel being an identifier. */
export const busChannel = "outpost_bus";

export async function listenToBus(query: SqlRunner): Promise<void> {
  await query.run(sql`listen outpost_bus`);
}

/** A round trip that proves the connection still answers. */
export async function pingBus(query: SqlRunner): Promise<void> {
  await query.run(sql`select 1`);
}

/**
 * Sends sealed messages (core/bus-envelope.ts) to every instance listening, this one included, in
 * one transaction: in their order (a function scan of the array yields it in order, and PostgreSQL
 * delivers a transaction's notifications in the order they were made).
 */
export async function notifyBus(query: SqlRunner, wires: string[]): Promise<void> {
  await query.run(sql`select pg_notify(${busChannel}, wire) from unnest(${wires}::text[]) as wire`);
}
