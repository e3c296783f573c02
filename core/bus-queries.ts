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

/** Sends a sealed message (core/bus-envelope.ts) to every instance listening, this one included. */
export async function notifyBus(query: SqlRunner, wire: string): Promise<void> {
  await query.run(sql`select pg_notify(${busChannel}, ${wire})`);
}
