/** The SQL runner on a real database: outside and inside a transaction, errors, and decoding. */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { UniqueConstraintViolationException } from "@mikro-orm/core";
import pg from "pg";
import { createOrm, migrate, type Orm } from "../../core/db/orm.ts";
import { createStatements, inTransaction, onConnection, sql, type Statements } from "../../core/db/sql.ts";
import { int, row, text } from "../../core/db/rows.ts";
import { createTestDatabase, type TestDatabase } from "../support/database.ts";

describe("the SQL runner", () => {
  let database: TestDatabase;
  let orm: Orm;
  let statements: Statements;
  before(async () => {
    database = await createTestDatabase();
    orm = await createOrm({ url: database.url, poolSize: 4 });
    await migrate(orm);
    statements = createStatements(database.kind === "postgres");
    await orm.em.fork().execute("create table runner_things (id text primary key, n int not null)");
  });
  after(async () => {
    await orm?.close();
    await database?.drop();
  });

  const thing = row({ id: text, n: int });

  it("inserts, reads and counts outside a transaction, the same statement twice (named on a server)", async () => {
    const query = statements.on(orm.em.fork());
    assert.equal(await query.run(sql`insert into runner_things (id, n) values (${"a"}, ${1}), (${"b"}, ${2})`), 2);
    for (let i = 0; i < 2; i++) {
      assert.deepEqual(await query.rows(sql`select id, n from runner_things where n >= ${1} order by id`, thing), [
        { id: "a", n: 1 },
        { id: "b", n: 2 },
      ]);
    }
    assert.deepEqual(await query.one(sql`select count(*) as n, 'x' as id from runner_things`, thing), { id: "x", n: 2 });
    assert.equal(await query.one(sql`select id, n from runner_things where id = ${"none"}`, thing), undefined);
  });

  it("runs on the transaction's connection inside one: its writes are seen inside and gone after a rollback", async () => {
    const em = orm.em.fork();
    await assert.rejects(
      em.transactional(async (tx) => {
        const query = inTransaction(tx);
        await query.run(sql`insert into runner_things (id, n) values (${"t"}, ${9})`);
        assert.deepEqual(await query.one(sql`select id, n from runner_things where id = ${"t"}`, thing), { id: "t", n: 9 });
        // The pool's runner is another connection: it does not see the uncommitted row. (The
        // embedded database serves one transaction at a time, so there it would wait for this one.)
        if (database.kind === "postgres") assert.equal(await statements.on(orm.em.fork()).one(sql`select id, n from runner_things where id = ${"t"}`, thing), undefined);
        throw new Error("roll back");
      }),
      /roll back/,
    );
    assert.equal(await statements.on(em).one(sql`select id, n from runner_things where id = ${"t"}`, thing), undefined);
  });

  it("fails a unique violation as the ORM's exception, inside a transaction and outside", async () => {
    const query = statements.on(orm.em.fork());
    await assert.rejects(query.run(sql`insert into runner_things (id, n) values (${"a"}, ${5})`), UniqueConstraintViolationException);
    await assert.rejects(
      orm.em.fork().transactional((tx) => inTransaction(tx).run(sql`insert into runner_things (id, n) values (${"a"}, ${5})`)),
      UniqueConstraintViolationException,
    );
  });

  it("names the statement when a row does not decode", async () => {
    const query = statements.on(orm.em.fork());
    await assert.rejects(
      query.rows(sql`select id, 'many' as n from runner_things`, thing),
      /column n: expected a whole number.*in the row of: select id, 'many' as n from runner_things/,
    );
  });

  it("refuses inTransaction outside one: a statement meant for a transaction must not run on its own", () => {
    assert.throws(() => inTransaction(orm.em.fork()), /inside a transaction/);
  });

  it("runs on a bare pool or client, failing with the driver's own error", async () => {
    const pool = new pg.Pool({ connectionString: database.url, max: 1 });
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      for (const query of [onConnection(pool), onConnection(client)]) {
        assert.deepEqual(await query.one(sql`select id, n from runner_things where id = ${"a"}`, thing), { id: "a", n: 1 });
        assert.equal(await query.run(sql`update runner_things set n = n where id = any(${["a", "b"]}::text[])`), 2);
        await assert.rejects(query.run(sql`insert into runner_things (id, n) values (${"a"}, ${5})`), pg.DatabaseError);
      }
    } finally {
      await client.end();
      await pool.end();
    }
  });

  it("runs a statement unnamed, and every later one, once the connection's session already holds its name (a pooler, the embedded database by URL)", async () => {
    const single = await createOrm({ url: database.url, poolSize: 1 });
    const warnings: string[] = [];
    try {
      const shared = createStatements(true, (message) => warnings.push(message));
      const statement = sql`select id, n from runner_things where id = ${"a"}`;
      // Another connection of the same session prepared this name: PostgreSQL refuses to parse it again.
      const name = `outpost_${createHash("sha256").update(statement.text).digest("hex").slice(0, 16)}`;
      await single.em.fork().execute(`prepare ${name} (text) as ${statement.text}`);
      const query = shared.on(single.em.fork());
      assert.deepEqual(await query.one(statement, thing), { id: "a", n: 1 });
      assert.deepEqual(await query.one(sql`select id, n from runner_things where id = ${"b"}`, thing), { id: "b", n: 2 });
      assert.equal(warnings.length, 1);
      assert.match(warnings[0], /42P05.*share a session.*unnamed/);
    } finally {
      await single.close();
    }
  });
});
