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
import type pg from "pg";
import type { EntityManager } from "@mikro-orm/postgresql";
import { createStatements as createSqlStatements, runnerOn, unnamed, type Sql, type SqlRunner } from "./sql.ts";

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
  return Object.assign(legacy, runnerOn(em, unnamed));
}

/** Built once in the composition root; the old `?` statements run named through the new runner. */
export function createStatements(named: boolean, warn?: (message: string) => void): Statements {
  const modern = createSqlStatements(named, warn);
  const statements: Statements = {
    db: (em) => ({ em, query: statements.on(em) }),
    onPool: modern.onPool,
    on(em, options) {
      const runner = modern.on(em, options);
      const legacy: LegacyQuery = async <T>(text: string, values: unknown[]) => {
        if (!named || em.getTransactionContext()) return em.execute<T[]>(text, values as never);
        let i = 0;
        return runner.rows({ text: text.replace(/\?/g, () => `$${++i}`), values } as unknown as Sql, (row) => row as T);
      };
      return Object.assign(legacy, runner);
    },
  };
  return statements;
}
