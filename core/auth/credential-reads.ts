/**
 * The credential lookups of every user call (the auth interceptor's, and a long stream's rechecks),
 * gathered: while one lookup statement of a kind is on its way, the lookups that arrive meanwhile
 * go together in the next (core/gather.ts). A script's burst of calls with one API key then costs
 * the database a statement per few calls instead of one per call. A lookup is never answered from
 * a statement sent before it arrived, so a key revoked or a session ended before a call came is
 * refused to that call as before.
 */
import type { EntityManager } from "@mikro-orm/postgresql";
import type { Statements } from "../db/statements.ts";
import { SpanStatusCode, trace } from "@opentelemetry/api";
import { createGatherer, stalledAfterMs } from "../gather.ts";
import { findApiKeys, findSessions, type ApiKeyRow, type CredentialLookup, type SessionRow, type WithServerAccess } from "./auth-queries.ts";

export interface CredentialReads {
  session(lookup: CredentialLookup): Promise<(SessionRow & WithServerAccess) | undefined>;
  apiKey(lookup: CredentialLookup): Promise<(ApiKeyRow & WithServerAccess) | undefined>;
}

/** The most lookups one statement carries. */
const maxBatch = 64;

/**
 * A lookup statement held up by a hung connection stops only its own lookups (core/gather.ts
 * stalledAfterMs), which fail (unavailable) once it has had no answer for this long; the
 * connection is dropped.
 */
export const lookupTimeoutMs = 5_000;

/**
 * One kind's lookups gathered; the same lookup twice in one batch (one key, one server: a script's
 * burst) is asked once and both get the row.
 */
function gathered<T>(find: (lookups: readonly CredentialLookup[]) => Promise<Array<T | undefined>>, stallMs: number) {
  const key = (l: CredentialLookup) => `${l.hash}\u0000${l.serverId ?? ""}`;
  const gatherer = createGatherer<CredentialLookup, T | undefined>(async (lookups) => {
    const distinct = new Map<string, number>();
    const asked: CredentialLookup[] = [];
    // Each lookup's position among the distinct ones asked.
    const at = lookups.map((lookup) => {
      const k = key(lookup);
      let i = distinct.get(k);
      if (i === undefined) distinct.set(k, (i = asked.push(lookup) - 1));
      return i;
    });
    const rows = await find(asked);
    return at.map((i) => rows[i]);
  }, { maxBatch, stallMs });
  // The statement is several calls', so it has no span of its own in a trace (core/gather.ts); each
  // call's trace shows how long it waited for its lookup instead.
  const tracer = trace.getTracer("outpost.db");
  return (lookup: CredentialLookup) =>
    tracer.startActiveSpan("credential lookup", (span) =>
      gatherer.submit(lookup).then(
        (row) => (span.end(), row),
        (error: unknown) => {
          span.setStatus({ code: SpanStatusCode.ERROR });
          span.end();
          throw error;
        },
      ),
    );
}

/**
 * `em` must be outside any transaction (the root's fork): the lookups are nobody's unit of work.
 * The times are {@link stalledAfterMs} and {@link lookupTimeoutMs} unless a test says otherwise.
 */
export function createCredentialReads(statements: Statements, em: EntityManager, { stallMs = stalledAfterMs, timeoutMs = lookupTimeoutMs } = {}): CredentialReads {
  return {
    session: gathered((lookups) => findSessions(statements.on(em, { timeoutMs }), lookups), stallMs),
    apiKey: gathered((lookups) => findApiKeys(statements.on(em, { timeoutMs }), lookups), stallMs),
  };
}
