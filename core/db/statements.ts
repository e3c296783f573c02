/**
 * Plain SQL on the hot paths (a credential on every call, a token exchange, a server's access
 * check): one statement costs less CPU than the ORM's query building and hydration for it.
 *
 * On a PostgreSQL server each statement runs as a named prepared statement on the pool under the
 * EntityManager, so PostgreSQL parses and plans it once per connection. Inside a transaction, and on
 * the embedded database (whose connections share one session, so a statement outlives the
 * connection that prepared it and the next one fails to prepare it again), it goes through
 * em.execute instead, with the same `?` placeholders.
 */
import { hash } from "node:crypto";
import type pg from "pg";
import type { EntityManager, PostgreSqlConnection } from "@mikro-orm/postgresql";
import { createStatements as createSqlStatements, runnerOn, type SqlRunner } from "./sql.ts";
import { SpanStatusCode, trace } from "@opentelemetry/api";
import { querySpan } from "./query-spans.ts";

/** Runs one statement with `?` placeholders and returns its rows (the old way: see core/db/sql.ts). */
export type LegacyQuery = <T = Record<string, unknown>>(sql: string, values: unknown[]) => Promise<T[]>;

/** A runner of `sql` statements that still also runs the old `?` ones while modules move over. */
export type Query = LegacyQuery & SqlRunner;

/** An EntityManager and the plain statements beside it, for what needs both (an access check). */
export interface Db {
  em: EntityManager;
  query: Query;
}

export interface Statements {
  /**
   * The statements of this EntityManager: on its transaction if it is in one. With `timeoutMs`, a
   * named statement that has no answer by then fails ("Query read timeout", answered unavailable)
   * and its connection is dropped from the pool, so a hung connection is not used again.
   */
  on(em: EntityManager, options?: { timeoutMs?: number }): Query;
  /** The EntityManager with its statements. */
  db(em: EntityManager): Db;
  /** A runner on a pool of its own (the rate limits' counts). */
  onPool(pool: pg.Pool): SqlRunner;
}

/**
 * The statements of an EntityManager through em.execute: a transaction's, and the background
 * jobs', where a named statement saves nothing.
 */
export function executeOn(em: EntityManager): Query {
  const legacy: LegacyQuery = <T>(sql: string, values: unknown[]) => em.execute<T[]>(sql, values as never);
  return Object.assign(legacy, runnerOn(em, () => undefined));
}

/** Built once in the composition root; it keeps the names it gave the statements it has seen. */
export function createStatements(named: boolean, onTooManyTexts?: (count: number) => void): Statements {
  const modern = createSqlStatements(named, onTooManyTexts);
  const prepared = new Map<string, { name: string; text: string }>();
  const preparedOf = (sql: string) => {
    let p = prepared.get(sql);
    if (!p) {
      let i = 0;
      p = { name: `outpost_${hash("sha256", sql).slice(0, 16)}`, text: sql.replace(/\?/g, () => `$${++i}`) };
      prepared.set(sql, p);
    }
    return p;
  };
  // A named statement bypasses the ORM, so it gets its span here; em.execute's get theirs from
  // the ORM's query log, which the composition root traces.
  const tracer = trace.getTracer("outpost.db");
  const statements: Statements = {
    db: (em) => ({ em, query: statements.on(em) }),
    onPool: modern.onPool,
    on(em, options) {
      return Object.assign(legacyOn(em, options), modern.on(em, options));
    },
  };
  function legacyOn(em: EntityManager, options?: { timeoutMs?: number }): LegacyQuery {
    {
      const timeout = options?.timeoutMs === undefined ? undefined : { query_timeout: options.timeoutMs };
      if (named && !em.getTransactionContext()) {
        return async <T>(sql: string, values: unknown[]) => {
          const pool = await (em.getConnection() as PostgreSqlConnection).getNativeClient();
          const span = querySpan(sql);
          return tracer.startActiveSpan(span.name, span.options, async (active) => {
            try {
              return (await pool.query({ ...preparedOf(sql), values, ...timeout })).rows as T[];
            } catch (error) {
              active.setStatus({ code: SpanStatusCode.ERROR });
              throw error;
            } finally {
              active.end();
            }
          });
        };
      }
      return <T>(sql: string, values: unknown[]) => em.execute<T[]>(sql, values as never);
    }
  }
  return statements;
}
