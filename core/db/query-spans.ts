/**
 * What a database statement's span says (docs/operations.md, Tracing), shared by the plain
 * statements here and the ORM's queries, which the composition root traces. The text is the
 * statement with its `?` or `$n` placeholders, never the values, which can be secrets' hashes or
 * people's addresses.
 */
import { SpanKind, type SpanOptions } from "@opentelemetry/api";

/** Statement kinds a span is named after; anything else is just `SQL`, so names stay a small set. */
const operations = new Set(["SELECT", "INSERT", "UPDATE", "DELETE", "WITH", "BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE"]);

/** A span name and options for one statement, as a database client's span. */
export function querySpan(sql: string, startTime?: number): { name: string; options: SpanOptions } {
  const word = /^\s*([A-Za-z]+)/.exec(sql)?.[1].toUpperCase() ?? "";
  return {
    name: operations.has(word) ? word : "SQL",
    options: { kind: SpanKind.CLIENT, startTime, attributes: { "db.system": "postgresql", "db.statement": sql } },
  };
}
