/**
 * node bench/heap-diff.ts EARLIER.heapsnapshot LATER.heapsnapshot [PER] — what grew between two V8
 * heap snapshots of one process (bench:soak takes them with SOAK_HEAP_SNAPSHOTS, bench:fleet with
 * BENCH_HEAP_SNAPSHOTS): the live heap's total and the object groups (constructor or type) whose
 * retained count or self size grew most, divided by PER when given (per agent added, say). A heap
 * snapshot is taken after a full collection, so its total is the live heap, free of garbage: equal
 * totals mean a flat heap, whatever the resident memory did.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

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

/**
 * Prints the two totals and the groups that grew most in bytes; with `per` (the agents added, say),
 * each group's growth is divided by it: count and bytes per one.
 */
export function printDiff(earlier: HeapSummary, later: HeapSummary, top = 12, per = 1): void {
  console.log(`live heap: ${mb(earlier.totalBytes)} MB (${earlier.nodes} objects) → ${mb(later.totalBytes)} MB (${later.nodes} objects)`);
  if (per !== 1)
    console.log(
      `growth per one of ${per}: ${((later.totalBytes - earlier.totalBytes) / per).toFixed(0)} bytes, ${((later.nodes - earlier.nodes) / per).toFixed(1)} objects`,
    );
  const rows = [...later.groups].map(([key, g]) => {
    const before = earlier.groups.get(key) ?? { count: 0, bytes: 0 };
    return { key, count: g.count - before.count, bytes: g.bytes - before.bytes };
  });
  rows.sort((a, b) => b.bytes - a.bytes);
  console.log(per === 1 ? "groups that grew most (count, bytes):" : "groups that grew most (count and bytes per one):");
  for (const row of rows.slice(0, top)) {
    if (row.bytes <= 0) break;
    const count = per === 1 ? String(row.count) : (row.count / per).toFixed(2);
    const bytes = per === 1 ? `${(row.bytes / 1024).toFixed(1)} KiB` : `${(row.bytes / per).toFixed(0)} B`;
    console.log(`  ${row.key.padEnd(64)} ${`+${count}`.padStart(9)} ${`+${bytes}`.padStart(14)}`);
  }
}

/**
 * Has the process `pid` (started with --heapsnapshot-signal=SIGUSR2 --diagnostic-dir=`dir`) write a
 * heap snapshot, and resolves with its file once `ready` says the process answers again.
 */
export async function takeHeapSnapshot(pid: number, dir: string, ready: () => Promise<unknown>): Promise<string> {
  const before = new Set(readdirSync(dir));
  process.kill(pid, "SIGUSR2");
  for (;;) {
    await new Promise((r) => setTimeout(r, 500));
    const added = readdirSync(dir).find((f) => f.endsWith(".heapsnapshot") && !before.has(f));
    if (added) {
      await ready();
      return join(dir, added);
    }
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [a, b, per] = process.argv.slice(2);
  if (!a || !b) {
    console.error("usage: node bench/heap-diff.ts EARLIER.heapsnapshot LATER.heapsnapshot [PER]");
    process.exit(2);
  }
  printDiff(summarize(a), summarize(b), 30, Number(per ?? 1));
}
