import assert from "node:assert/strict";
import { PerformanceObserver, constants, type PerformanceEntry } from "node:perf_hooks";
import { collectEveryBytes, createPieceCollector } from "../../../contract/piece-collector.ts";

/** The young-generation collections that ran while `run` did. */
async function youngCollectionsDuring(run: () => void): Promise<number> {
  const entries: PerformanceEntry[] = [];
  const observer = new PerformanceObserver((list) => entries.push(...list.getEntries()));
  observer.observe({ entryTypes: ["gc"] });
  try {
    run();
    // GC entries are delivered after the collection, on a later turn.
    await new Promise((resolve) => setTimeout(resolve, 50));
  } finally {
    observer.disconnect();
  }
  return entries.filter((entry) => (entry as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR).length;
}

/** A transfer's spent buffers freed while young, every few MiB of pieces (docs/operations.md, Performance). */
describe("contract: a transfer's piece collector", () => {
  it("collects V8's young generation once per 2 MiB of pieces, not per piece", async () => {
    const collect = createPieceCollector();
    const piece = 1024 * 1024;
    const collections = await youngCollectionsDuring(() => {
      for (let sent = 0; sent < 4 * collectEveryBytes; sent += piece) collect(piece);
    });
    // Exactly four of ours; V8 may run one of its own meanwhile.
    assert.ok(collections >= 4 && collections <= 5, `${collections} young collections`);
  });

  it("frees the pieces' buffers without waiting for a full collection", async () => {
    const collect = createPieceCollector();
    const piece = 1024 * 1024;
    const before = process.memoryUsage().arrayBuffers;
    let most = 0;
    for (let i = 0; i < 64; i++) {
      Buffer.alloc(piece).fill(i);
      collect(piece);
      await new Promise((resolve) => setImmediate(resolve));
      most = Math.max(most, process.memoryUsage().arrayBuffers - before);
    }
    assert.ok(most <= 3 * collectEveryBytes, `${(most / piece).toFixed(0)} MiB of buffers held at most`);
  });

  it("leaves the process's global scope as it was: no gc function unless Node was started with --expose-gc", () => {
    const had = "gc" in globalThis;
    createPieceCollector()(collectEveryBytes);
    assert.equal("gc" in globalThis, had);
  });
});
