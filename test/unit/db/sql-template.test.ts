/** The SQL template and the row decoders: pure, no database (npm run test:unit). */
import assert from "node:assert/strict";
import { empty, join, sql } from "../../../core/db/sql.ts";
import { arrayOf, bytes, int, nullable, oneOf, row, RowShapeError, text, timestamp, type Row } from "../../../core/db/rows.ts";

describe("unit: the sql template", () => {
  it("keeps each value as a parameter, numbered in order", () => {
    const id = "7f1c",
      now = new Date(0);
    const q = sql`update grants set used_at = ${now} where id = ${id} and used_at is null`;
    assert.equal(q.text, "update grants set used_at = $1 where id = $2 and used_at is null");
    assert.deepEqual(q.values, [now, id]);
  });

  it("splices a fragment with its own parameters renumbered, wherever it sits", () => {
    const live = (at: Date) => sql`(expires_at is null or expires_at > ${at})`;
    const at = new Date(1);
    const q = sql`select id from grants where user_id = ${"u"} and ${live(at)} and server_id = ${"s"}`;
    assert.equal(q.text, "select id from grants where user_id = $1 and (expires_at is null or expires_at > $2) and server_id = $3");
    assert.deepEqual(q.values, ["u", at, "s"]);
  });

  it("never puts a value's text into the statement: a quote stays a parameter", () => {
    const q = sql`select * from users where email = ${"x'; drop table users; --"}`;
    assert.equal(q.text, "select * from users where email = $1");
  });

  it("joins fragments and leaves out an empty one", () => {
    const filters = [sql`kind = ${"a"}`, sql`actor = ${"b"}`];
    assert.equal(sql`select 1 where ${join(filters, " and ")}`.text, "select 1 where kind = $1 and actor = $2");
    assert.equal(sql`select 1${empty}`.text, "select 1");
  });

  it("passes a list as one array parameter, so the text does not vary with its length", () => {
    const a = sql`select 1 where id = any(${["x"]})`;
    const b = sql`select 1 where id = any(${["x", "y", "z"]})`;
    assert.equal(a.text, b.text);
  });
});

describe("unit: row decoders", () => {
  const grant = row({
    id: text,
    uses: int,
    expires_at: nullable(timestamp),
    actions: arrayOf(text),
    status: oneOf("pending", "accepted"),
  });

  it("decodes what pg and row_to_json give: int8 as digits, timestamps as Dates or ISO text", () => {
    const decoded: Row<typeof grant> = grant({ id: "g", uses: "12", expires_at: "2026-11-29T03:00:00.5+00:00", actions: ["view"], status: "pending", extra: 1 });
    assert.deepEqual(decoded, { id: "g", uses: 12, expires_at: new Date("2026-11-29T03:00:00.500Z"), actions: ["view"], status: "pending" });
    assert.equal(grant({ id: "g", uses: 1, expires_at: null, actions: [], status: "accepted" }).expires_at, null);
  });

  it("names the column and what it found when a row is not what its query says", () => {
    assert.throws(
      () => grant({ id: "g", uses: "many", expires_at: null, actions: [], status: "pending" }),
      (e: Error) => e instanceof RowShapeError && /column uses: expected a whole number, got the text "many"/.test(e.message),
    );
    assert.throws(() => grant({ id: "g", uses: 1, expires_at: null, actions: [], status: "lost" }), /column status: expected one of pending, accepted/);
    assert.throws(() => grant({ uses: 1, expires_at: null, actions: [], status: "pending" }), /column id: expected text, got undefined/);
  });

  it("decodes a nested row_to_json object by its own row", () => {
    const outer = row({ role: text, grant: nullable(row({ id: text, uses: int })) });
    assert.deepEqual(outer({ role: "member", grant: { id: "g", uses: 2 } }), { role: "member", grant: { id: "g", uses: 2 } });
    assert.throws(() => outer({ role: "member", grant: { id: 3, uses: 2 } }), /column grant: column id: expected text/);
  });

  it("decodes a bytea column as the Buffer pg gives, and nothing else as bytes", () => {
    const sealed = row({ iv: bytes });
    assert.deepEqual(sealed({ iv: Buffer.from([1, 2]) }), { iv: Buffer.from([1, 2]) });
    assert.throws(() => sealed({ iv: "\\x0102" }), /column iv: expected bytes, got the text/);
  });
});
