/**
 * The gatherer (core/gather.ts) under the activity writer and the credential lookups: an item
 * alone goes at once, the items that come while a batch is under way go in the next one (never in
 * one sent before they came), each gets its own result, and a failed batch fails its items only.
 */
import assert from "node:assert/strict";
import { createGatherer, maxStalled } from "../../../core/gather.ts";

/** A `run` whose batches finish only when the test says, recording each batch it got. */
function heldRun() {
  const batches: number[][] = [];
  const held: Array<{ finish(): void; fail(error: Error): void }> = [];
  const run = (items: number[]) =>
    new Promise<string[]>((resolve, reject) => {
      batches.push(items);
      held.push({ finish: () => resolve(items.map((i) => `result ${i}`)), fail: reject });
    });
  return { run, batches, held };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

/** Lets every promise settle that can without the event loop turning: no timer fires meanwhile. */
async function microtasks() {
  for (let i = 0; i < 50; i++) await Promise.resolve();
}

/** Waits (polling) until `run` has been given `n` batches. */
async function batchesReach(batches: unknown[], n: number) {
  while (batches.length < n) await new Promise((resolve) => setTimeout(resolve, 2));
}

describe("gather: many callers' items in few batches", () => {
  it("sends an item at once when nothing is under way, and answers it with its own result", async () => {
    const { run, batches, held } = heldRun();
    const gather = createGatherer(run, { maxBatch: 10 });
    const answer = gather.submit(1);
    assert.deepEqual(batches, [[1]], "sent as it was submitted");
    held[0].finish();
    assert.equal(await answer, "result 1");
  });

  it("puts the items that come while a batch is under way in the next batch, in order, at most maxBatch at a time", async () => {
    const { run, batches, held } = heldRun();
    const gather = createGatherer(run, { maxBatch: 3 });
    const answers = [gather.submit(1)];
    for (let i = 2; i <= 6; i++) answers.push(gather.submit(i));
    assert.deepEqual(batches, [[1]], "the later items wait for the first batch");
    held[0].finish();
    await turn();
    assert.deepEqual(batches, [[1], [2, 3, 4]]);
    // An item that comes now goes after those already waiting, never into the batch under way.
    answers.push(gather.submit(7));
    held[1].finish();
    await turn();
    assert.deepEqual(batches, [[1], [2, 3, 4], [5, 6, 7]]);
    held[2].finish();
    assert.deepEqual(
      await Promise.all(answers),
      [1, 2, 3, 4, 5, 6, 7].map((i) => `result ${i}`),
    );
  });

  it("fails the items of a failed batch with its error, and goes on with the next", async () => {
    const { run, batches, held } = heldRun();
    const gather = createGatherer(run, { maxBatch: 10 });
    const first = gather.submit(1);
    const second = [gather.submit(2), gather.submit(3)];
    held[0].fail(new Error("the database went away"));
    await assert.rejects(first, /the database went away/);
    await turn();
    assert.deepEqual(batches, [[1], [2, 3]]);
    held[1].finish();
    assert.deepEqual(await Promise.all(second), ["result 2", "result 3"]);
  });

  it("lets a batch stalled past stallMs hold up the next no longer; the stalled one answers its own items when it ends, and flush waits for it", async () => {
    const { run, batches, held } = heldRun();
    const gather = createGatherer(run, { maxBatch: 10, stallMs: 20 });
    const stalled = gather.submit(1);
    const next = gather.submit(2);
    assert.deepEqual(batches, [[1]]);
    while (batches.length < 2) await new Promise((resolve) => setTimeout(resolve, 5));
    assert.deepEqual(batches, [[1], [2]], "sent while the first is still under way");
    held[1].finish();
    assert.equal(await next, "result 2");
    let flushed = false;
    const flushing = gather.flush().then(() => (flushed = true));
    await turn();
    assert.equal(flushed, false, "flush waits for the stalled batch too");
    held[0].finish();
    assert.equal(await stalled, "result 1");
    await flushing;
  });

  it(`leaves at most ${maxStalled} stalled batches running; the next waits for one of them to end`, async () => {
    const { run, batches, held } = heldRun();
    const gather = createGatherer(run, { maxBatch: 1, stallMs: 10 });
    const answers = [1, 2, 3, 4, 5].map((i) => gather.submit(i));
    const until = async (n: number) => {
      while (batches.length < n) await new Promise((resolve) => setTimeout(resolve, 5));
    };
    await until(maxStalled + 1);
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(batches.length, maxStalled + 1, "one under way and the stalled ones, no more");
    held[1].finish();
    await until(maxStalled + 2);
    held.slice(0).forEach((h, i) => i !== 1 && h.finish());
    await until(5);
    held[4].finish();
    assert.deepEqual(
      await Promise.all(answers),
      [1, 2, 3, 4, 5].map((i) => `result ${i}`),
    );
  });

  it("without stallMs, waits for a batch however long it takes", async () => {
    const { run, batches, held } = heldRun();
    const gather = createGatherer(run, { maxBatch: 10 });
    const first = gather.submit(1);
    const second = gather.submit(2);
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.deepEqual(batches, [[1]]);
    held[0].finish();
    await first;
    await turn();
    assert.deepEqual(batches, [[1], [2]]);
    held[1].finish();
    assert.equal(await second, "result 2");
  });

  it("flush waits for every item submitted so far", async () => {
    const { run, held } = heldRun();
    const gather = createGatherer(run, { maxBatch: 10 });
    const done: number[] = [];
    void gather.submit(1).then(() => done.push(1));
    void gather.submit(2).then(() => done.push(2));
    let flushed = false;
    const flushing = gather.flush().then(() => (flushed = true));
    held[0].finish();
    await turn();
    assert.equal(flushed, false, "the second batch is still under way");
    held[1].finish();
    await flushing;
    assert.deepEqual(done, [1, 2]);
  });

  it("fails every item of a failed batch with that batch's own error, and no item of the batches around it", async () => {
    const { run, batches, held } = heldRun();
    const gather = createGatherer(run, { maxBatch: 3 });
    const before = gather.submit(1);
    const failing = [gather.submit(2), gather.submit(3), gather.submit(4)];
    const after = gather.submit(5);
    held[0].finish();
    await turn();
    assert.deepEqual(batches, [[1], [2, 3, 4]]);
    const error = new Error("deadlock detected");
    held[1].fail(error);
    const outcomes = await Promise.allSettled(failing);
    for (const outcome of outcomes) assert.equal(outcome.status === "rejected" && outcome.reason, error, "each submitter gets the batch's error itself");
    await turn();
    held[2].finish();
    assert.deepEqual(await Promise.all([before, after]), ["result 1", "result 5"]);
  });

  it("fails a batch's items when run throws before returning a promise, and goes on", async () => {
    const sent: number[][] = [];
    const gather = createGatherer(
      (items: number[]) => {
        sent.push(items);
        if (items.includes(1)) throw new Error("the statement could not be built");
        return Promise.resolve(items.map((i) => i * 10));
      },
      { maxBatch: 10 },
    );
    await assert.rejects(gather.submit(1), /the statement could not be built/);
    assert.equal(await gather.submit(2), 20);
    assert.deepEqual(sent, [[1], [2]]);
  });

  it("while busy, lets a batch short of maxBatch wait gatherMs for the items of that moment; after a quiet spell past busyWithinMs an item goes at once", async () => {
    const { run, batches, held } = heldRun();
    const gather = createGatherer(run, { maxBatch: 10, gatherMs: 20, busyWithinMs: 200 });
    void gather.submit(1);
    assert.deepEqual(batches, [[1]], "the first item finds nothing busy and goes at once");
    held[0].finish();
    await microtasks();
    // A batch ended just now: the next item waits for company, and the one after it joins it.
    const second = gather.submit(2);
    await microtasks();
    assert.deepEqual(batches, [[1]], "the item waits for the moment's others");
    const third = gather.submit(3);
    await batchesReach(batches, 2);
    assert.deepEqual(batches, [[1], [2, 3]]);
    held[1].finish();
    assert.deepEqual(await Promise.all([second, third]), ["result 2", "result 3"]);
    // Quiet for longer than busyWithinMs: nothing to wait for.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const fourth = gather.submit(4);
    assert.deepEqual(batches, [[1], [2, 3], [4]], "sent as it was submitted");
    held[2].finish();
    assert.equal(await fourth, "result 4");
  });

  it("never makes a full batch wait for company, busy or not", async () => {
    const { run, batches, held } = heldRun();
    const gather = createGatherer(run, { maxBatch: 2, gatherMs: 20, busyWithinMs: 60_000 });
    const answers = [1, 2, 3].map((i) => gather.submit(i));
    held[0].finish();
    await microtasks();
    assert.deepEqual(batches, [[1], [2, 3]], "two waiting make a full batch: it goes as the last one ends");
    held[1].finish();
    assert.deepEqual(await Promise.all(answers), ["result 1", "result 2", "result 3"]);
  });
});
