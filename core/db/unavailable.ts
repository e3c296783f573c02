/**
 * Whether a failure means the database cannot be reached right now (stopped, restarting, the
 * network between dropped, out of connections), as opposed to a fault in the request or the code.
 * Such a call is answered `unavailable` with a hint to retry, and the pool reconnects by itself
 * once PostgreSQL is back: nothing in Outpost holds state that the outage could corrupt.
 */
import { ConnectionException } from "@mikro-orm/core";

/** Socket failures on the way to PostgreSQL. */
const networkCodes = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "ENOTFOUND", "EAI_AGAIN"]);

/**
 * SQLSTATEs of a server that cannot serve: class 08 (connection exception), shutting down or
 * starting up (57P01–57P03), and too many connections (53300).
 */
const serverStates = new Set(["57P01", "57P02", "57P03", "53300"]);

/** What `pg` says when a connection ends under a query, cannot be made in time, or a statement given a timeout had no answer. */
const poolMessages = [/^Connection terminated/, /^timeout exceeded when trying to connect/, /not queryable/, /^Query read timeout/];

export function isDatabaseUnavailable(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e instanceof ConnectionException) return true;
    const { code } = e as { code?: unknown };
    if (typeof code === "string" && (networkCodes.has(code) || serverStates.has(code) || code.startsWith("08"))) return true;
    if (poolMessages.some((pattern) => pattern.test(e.message))) return true;
  }
  return false;
}
