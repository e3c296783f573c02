/**
 * Plain SQL in core, one way: a statement is written with the `sql` template (values in place,
 * fragments composed as values, never glued as strings), run by a {@link SqlRunner} and read
 * through a decoder of its row (core/db/rows.ts). Entities stay for units of work; when to use
 * which is in docs/architecture.md, "Where SQL lives".
 *
 * The template is `sql-template-tag`'s: `sql\`… ${value} …\`` keeps each value as a parameter
 * ($1, $2, … in order), a nested `sql` fragment is spliced with its own parameters renumbered,
 * `join(fragments, sep)` joins fragments and `empty` is none. A statement's text must not vary
 * with its values (pass a list as one array parameter: `= any(${ids})`), because on a
 * PostgreSQL server each distinct text becomes a prepared statement on every connection.
 */
import { hash } from "node:crypto";
import type pg from "pg";
import { CompiledQuery } from "kysely";
import type { EntityManager, PostgreSqlConnection } from "@mikro-orm/postgresql";
import { SpanStatusCode, trace } from "@opentelemetry/api";
import sqlTemplate, { Sql, empty, join } from "sql-template-tag";
import { querySpan } from "./query-spans.ts";
import { RowShapeError, type Decode } from "./rows.ts";

export { Sql, empty, join };

/** A statement: `sql\`select … where id = ${id}\``. */
export const sql = sqlTemplate;

/** Runs statements on one connection source: a pool, or the transaction an EntityManager is in. */
export interface SqlRunner {
  /** Every row of the statement, each through `decode`. */
  rows<T>(statement: Sql, decode: Decode<T>): Promise<T[]>;
  /** The statement's first row through `decode`, or undefined when it has none. */
  one<T>(statement: Sql, decode: Decode<T>): Promise<T | undefined>;
  /** Runs a statement for its effect; the number of rows it inserted, changed or deleted. */
  run(statement: Sql): Promise<number>;
}

/** An EntityManager and the runner beside it, for what needs both (an access check). */
export interface Db {
  em: EntityManager;
  query: SqlRunner;
}

export interface Statements {
  /**
   * The runner of this EntityManager: on its transaction if it is in one, else on its pool. With
   * `timeoutMs`, a statement on the pool that has no answer by then fails ("Query read timeout",
   * answered unavailable) and its connection is dropped, so a hung connection is not used again.
   */
  on(em: EntityManager, options?: { timeoutMs?: number }): SqlRunner;
  /** The EntityManager with its runner. */
  db(em: EntityManager): Db;
}

/** What runs one statement's text and parameters and gives its rows and count. */
type Execute = (text: string, values: unknown[]) => Promise<{ rows: unknown[]; count: number }>;

/** Names a statement's text for a named prepared statement, or undefined to run it unnamed. */
interface Naming {
  nameOf(text: string): string | undefined;
  /** A named statement met a session it does not own: from now on every statement runs unnamed. */
  stop(code: string): void;
}

const unnamed: Naming = { nameOf: () => undefined, stop: () => {} };

/** Past this many distinct texts, new ones run unnamed: a statement's text varies with its values. */
const maxNamed = 2_000;

/**
 * What PostgreSQL answers a named statement when connections share a session (the embedded
 * database reached by its URL, a pooler in transaction mode): a name another connection prepared
 * already exists, or one this connection prepared is gone. Either fails at Parse or Bind, before
 * the statement runs, so it is safe to send again unnamed.
 */
const sharedSessionCodes = new Set(["42P05", "26000"]);

/**
 * Built once in the composition root. `named`: on a PostgreSQL server, a statement outside a
 * transaction runs as a named prepared statement, so PostgreSQL parses and plans it once per
 * connection; the embedded database shares one session among its connections (a statement would
 * outlive the connection that prepared it), so there every statement runs unnamed. Should a
 * server named turn out to share sessions, the first clash turns naming off, with one warning.
 */
export function createStatements(named: boolean, warn: (message: string) => void = () => {}): Statements {
  const names = new Map<string, string>();
  const naming: Naming = {
    nameOf(text) {
      if (!named) return undefined;
      let name = names.get(text);
      if (name === undefined && names.size < maxNamed) {
        name = `outpost_${hash("sha256", text).slice(0, 16)}`;
        names.set(text, name);
        if (names.size === maxNamed) warn(`${maxNamed} distinct statement texts: later ones run unnamed (a statement's text varies with its values)`);
      }
      return name;
    },
    stop(code) {
      if (!named) return;
      named = false;
      warn(
        `the database answered a named prepared statement with ${code}: its connections share a session (a pooler, or the embedded database by URL), so statements run unnamed from now on`,
      );
    },
  };
  const statements: Statements = {
    on: (em, options) => runnerOn(em, naming, options?.timeoutMs),
    db: (em) => ({ em, query: statements.on(em) }),
  };
  return statements;
}

/**
 * The runner of a transaction: its statements go on its connection (unnamed, as every statement in
 * a transaction). For code that is handed the transaction and not the composition's statements.
 */
export function inTransaction(tx: EntityManager): SqlRunner {
  if (!tx.getTransactionContext()) throw new Error("inTransaction needs an EntityManager inside a transaction");
  return runnerOn(tx, unnamed);
}

/**
 * A runner on a pool or a connection that no EntityManager holds (the rate limits' own pool, the
 * bus's LISTEN connection): each statement unnamed, and its failures the driver's own
 * (`pg.DatabaseError`), which those callers tell apart from a connection in doubt.
 */
export function onConnection(connection: Connection): SqlRunner {
  return runner(onPool(connection, unnamed), driverErrors);
}

/** What {@link onConnection} runs statements on: a `pg.Pool` or one `pg.Client`. */
export interface Connection {
  query(config: pg.QueryConfig & { query_timeout?: number }): Promise<pg.QueryResult>;
}

const driverErrors = (error: unknown) => error;

function onPool(pool: Connection, naming: Naming, timeoutMs?: number): Execute {
  return async (text, values) => {
    const send = (name: string | undefined) => pool.query({ name, text, values, ...(timeoutMs !== undefined && { query_timeout: timeoutMs }) });
    const name = naming.nameOf(text);
    let result: pg.QueryResult;
    try {
      result = await send(name);
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (name === undefined || typeof code !== "string" || !sharedSessionCodes.has(code)) throw error;
      naming.stop(code);
      result = await send(undefined);
    }
    return { rows: result.rows, count: result.rowCount ?? 0 };
  };
}

interface TransactionContext {
  executeQuery(query: CompiledQuery): Promise<{ rows: unknown[]; numAffectedRows?: bigint }>;
}

function runnerOn(em: EntityManager, naming: Naming, timeoutMs?: number): SqlRunner {
  const driver = em.getDriver();
  const transaction = em.getTransactionContext<TransactionContext>();
  const execute: Execute = transaction
    ? async (text, values) => {
        const result = await transaction.executeQuery(CompiledQuery.raw(text, values));
        return { rows: result.rows, count: Number(result.numAffectedRows ?? 0n) };
      }
    : async (text, values) => {
        const pool = (await (em.getConnection() as PostgreSqlConnection).getNativeClient()) as pg.Pool;
        return onPool(pool, naming, timeoutMs)(text, values);
      };
  // The ORM's own errors for the driver's (a unique violation, a connection lost), so a statement
  // fails the way an entity's query does (core/interceptors/error-interceptor.ts).
  return runner(execute, (error) => (error instanceof Error ? driver.convertException(error) : error));
}

const tracer = trace.getTracer("outpost.db");

/** A runner over `execute`: each statement a database client's span, each row decoded. */
function runner(execute: Execute, convert: (error: unknown) => unknown): SqlRunner {
  const send = (statement: Sql) => {
    const text = statement.text;
    const span = querySpan(text);
    return tracer.startActiveSpan(span.name, span.options, async (active) => {
      try {
        return await execute(text, statement.values);
      } catch (error) {
        active.setStatus({ code: SpanStatusCode.ERROR });
        throw convert(error);
      } finally {
        active.end();
      }
    });
  };
  const decoded = <T>(rows: unknown[], decode: Decode<T>, statement: Sql): T[] => {
    try {
      return rows.map(decode);
    } catch (error) {
      if (error instanceof RowShapeError) error.message = `${error.message} in the row of: ${firstLine(statement.text)}`;
      throw error;
    }
  };
  return {
    rows: async (statement, decode) => decoded((await send(statement)).rows, decode, statement),
    one: async (statement, decode) => {
      const { rows } = await send(statement);
      return rows.length ? decoded(rows.slice(0, 1), decode, statement)[0] : undefined;
    },
    run: async (statement) => (await send(statement)).count,
  };
}

function firstLine(text: string): string {
  return text.trim().split("\n", 1)[0].slice(0, 120);
}
