/**
 * The activity writer: stand-alone events from many callers at once go in few statements, each
 * caller answered once its own event is written, and one event the
 * database refuses fails only its own caller.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { createActivityWriter, type ActivityFacts } from "../../core/activity/record.ts";
import type { SqlRunner } from "../../core/db/sql.ts";
import { startTestCore, testConfig, type TestCore } from "../support/core.ts";

describe("activity: the writer of stand-alone events", function () {
  this.timeout(60_000);
  let t: TestCore;
  const organizationId = randomUUID();
  const sql = (text: string, params: unknown[] = []) => t.orm.em.fork().getConnection().execute(text, params);

  before(async () => {
    t = await startTestCore(testConfig);
  });
  after(async () => {
    await t?.close();
  });

  /** The pool's statements, counting each statement and each event it carried. */
  function counted(): { query: SqlRunner; statements: number[] } {
    const inner = t.deps.statements.on(t.orm.em.fork());
    const statements: number[] = [];
    const query: SqlRunner = {
      rows: inner.rows,
      one: inner.one,
      run(statement) {
        statements.push((JSON.parse(String(statement.values[0])) as unknown[]).length);
        return inner.run(statement);
      },
    };
    return { query, statements };
  }

  const facts = (targetId: string): ActivityFacts => ({
    organizationId,
    action: "server.console_command",
    targetType: "server",
    targetId,
    details: { command: targetId },
  });
  const written = async (prefix: string) =>
    ((await sql("select target_id from activity_events where target_id like ? order by created_at, id", [`${prefix}%`])) as Array<{ target_id: string }>).map(
      (r) => r.target_id,
    );

  it("writes an event alone and at once when nothing else is being written", async () => {
    const { query, statements } = counted();
    const writer = createActivityWriter(query);
    await writer.append("system", facts("alone-1"));
    assert.deepEqual(await written("alone-"), ["alone-1"]);
    await writer.append("system", facts("alone-2"));
    assert.deepEqual(statements, [1, 1]);
  });

  it("writes the events that arrive while one insert is on its way in the next, each caller answered once its own is written", async () => {
    const { query, statements } = counted();
    const writer = createActivityWriter(query, 10);
    const names = Array.from({ length: 25 }, (_, i) => `many-${String(i).padStart(2, "0")}`);
    await Promise.all(
      names.map(async (n) => {
        await writer.append("system", facts(n));
        assert.ok((await written(n)).length === 1, `${n} is written when its caller is answered`);
      }),
    );
    assert.deepEqual(statements, [1, 10, 10, 4], "the first alone, then at most 10 at a time");
    assert.deepEqual((await written("many-")).sort(), names);
  });

  it("while the log is busy, lets an event wait a moment for the others of that moment; when it is quiet, sends it at once", async () => {
    const { query, statements } = counted();
    const writer = createActivityWriter(query, 100, { gatherMs: 100, busyWithinMs: 1500 });
    await writer.append("system", facts("busy-0"));
    // Just after an insert ended: three events a few turns of the event loop apart go together.
    const next = (n: string) => new Promise<void>((resolve, reject) => setImmediate(() => writer.append("system", facts(n)).then(resolve, reject)));
    await Promise.all([writer.append("system", facts("busy-1")), next("busy-2"), next("busy-3")]);
    assert.deepEqual(statements, [1, 3]);
    // Quiet again (the last insert ended longer ago than busyWithinMs): the next is sent as it is appended.
    await new Promise((resolve) => setTimeout(resolve, 1600));
    const appended = writer.append("system", facts("busy-4"));
    assert.deepEqual(statements, [1, 3, 1], "sent without waiting for others");
    await appended;
    assert.deepEqual((await written("busy-")).sort(), ["busy-0", "busy-1", "busy-2", "busy-3", "busy-4"]);
  });

  it("fails only the caller whose event the database refuses; the others of its statement are written", async () => {
    const { query } = counted();
    const writer = createActivityWriter(query);
    const tooLong = `bad-${"x".repeat(80)}`; // target_id is at most 64 characters
    const results = await Promise.allSettled(["bad-first", "bad-a", tooLong, "bad-b"].map((n) => writer.append("system", facts(n))));
    assert.deepEqual(
      results.map((r) => r.status),
      ["fulfilled", "fulfilled", "rejected", "fulfilled"],
    );
    assert.deepEqual((await written("bad-")).sort(), ["bad-a", "bad-b", "bad-first"]);
  });

  it("writes a lone UTF-16 surrogate in a detail as U+FFFD rather than failing the event", async () => {
    const writer = createActivityWriter(counted().query);
    await writer.append("system", { ...facts("surrogate-1"), details: { command: "say a\ud800b" } });
    const [row] = (await sql("select details from activity_events where target_id = ?", ["surrogate-1"])) as Array<{ details: { command: string } }>;
    assert.equal(row.details.command, "say a\ufffdb");
  });

  it("flush waits for every event appended so far, those that arrive meanwhile included", async () => {
    const writer = createActivityWriter(counted().query, 5);
    const appended = Array.from({ length: 12 }, (_, i) => writer.append("system", facts(`flush-${String(i).padStart(2, "0")}`)));
    await writer.flush();
    assert.equal((await written("flush-")).length, 12);
    await Promise.all(appended);
    await writer.flush(); // with nothing under way it settles at once
  });
});
