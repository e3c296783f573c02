/**
 * node bench/heap-diff.ts EARLIER.heapsnapshot LATER.heapsnapshot — what grew between two V8 heap
 * snapshots of one process (bench:soak takes them with SOAK_HEAP_SNAPSHOTS): the live heap's total
 * and the object groups (constructor or type) whose retained count or self size grew most. A heap
 * snapshot is taken after a full collection, so its total is the live heap, free of garbage: equal
 * totals mean a flat heap, whatever the resident memory did.
 */
import { readFileSync } from "node:fs";

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] }; node_count: number };
  nodes: number[];
  strings: string[];
}

export interface HeapSummary {
  totalBytes: number;
  nodes: number;
  /** "type:name" → count and self size. */
  groups: Map<string, { count: number; bytes: number }>;
}

/** Reads a .heapsnapshot file into its total and per-group figures. */
export function summarize(file: string): HeapSummary {
  const snap = JSON.parse(readFileSync(file, "utf8")) as Snapshot;
  const fields = snap.snapshot.meta.node_fields;
  const types = snap.snapshot.meta.node_types[0];
  const width = fields.length;
  const [typeAt, nameAt, sizeAt] = ["type", "name", "self_size"].map((f) => fields.indexOf(f));
  const groups = new Map<string, { count: number; bytes: number }>();
  let totalBytes = 0;
  for (let i = 0; i < snap.nodes.length; i += width) {
    const type = types[snap.nodes[i + typeAt]!]!;
    const bytes = snap.nodes[i + sizeAt]!;
    totalBytes += bytes;
    // Strings and code are grouped by type only: their names are their contents.
    const name = type === "object" || type === "closure" || type === "native" ? snap.strings[snap.nodes[i + nameAt]!]! : "";
    const key = `${type}:${name.slice(0, 60)}`;
    const group = groups.get(key) ?? { count: 0, bytes: 0 };
    group.count++;
    group.bytes += bytes;
    groups.set(key, group);
  }
  return { totalBytes, nodes: snap.nodes.length / width, groups };
}

const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);

/** Prints the two totals and the groups that grew most in bytes. */
export function printDiff(earlier: HeapSummary, later: HeapSummary, top = 12): void {
  console.log(`live heap: ${mb(earlier.totalBytes)} MB (${earlier.nodes} objects) → ${mb(later.totalBytes)} MB (${later.nodes} objects)`);
  const rows = [...later.groups].map(([key, g]) => {
    const before = earlier.groups.get(key) ?? { count: 0, bytes: 0 };
    return { key, count: g.count - before.count, bytes: g.bytes - before.bytes };
  });
  rows.sort((a, b) => b.bytes - a.bytes);
  console.log(`groups that grew most (count, bytes):`);
  for (const row of rows.slice(0, top)) {
    if (row.bytes <= 0) break;
    console.log(`  ${row.key.padEnd(64)} ${String(row.count >= 0 ? `+${row.count}` : row.count).padStart(9)} ${`+${(row.bytes / 1024).toFixed(1)} KiB`.padStart(14)}`);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [a, b] = process.argv.slice(2);
  if (!a || !b) {
    console.error("usage: node bench/heap-diff.ts EARLIER.heapsnapshot LATER.heapsnapshot");
    process.exit(2);
  }
  printDiff(summarize(a), summarize(b));
}
