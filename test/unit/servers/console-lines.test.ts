/**
 * Console lines kept within a size (core/agents/console-lines.ts): a command's answer and the
 * live output travel in PostgreSQL notifications, so what is sent must fit its budget in JSON
 * bytes, whatever the lines hold (quotes, escapes, accents, emoji), losing the oldest lines first
 * and saying so. test/servers/console.test.ts proves the cut through a real agent; here are the
 * byte counts and the edges.
 */
import assert from "node:assert/strict";
import { answerBudgetBytes, chunkLines, cutNote, cutToBytes, fitLines, jsonBytes } from "../../../core/agents/console-lines.ts";

/** What a list of lines takes as the JSON array it travels in. */
const arrayBytes = (lines: readonly string[]) => Buffer.byteLength(JSON.stringify(lines), "utf8");

/** Lines of every kind of width, the same every run (a fixed linear congruential sequence). */
function sampleLines(count: number, seed: number): string[] {
  const pieces = ["a", "é", "€", "😀", '"', "\\", "\u0001", " ", "Steve", "[12:00:00 INFO]: "];
  let state = seed;
  const next = () => (state = (state * 1103515245 + 12345) % 2 ** 31);
  return Array.from({ length: count }, () => Array.from({ length: next() % 40 }, () => pieces[next() % pieces.length]).join(""));
}

describe("unit: console lines kept within a size", () => {
  it("counts a string's bytes as JSON writes it: quotes, escapes and UTF-8", () => {
    assert.equal(jsonBytes(""), 2);
    assert.equal(jsonBytes("abc"), 5);
    assert.equal(jsonBytes('a"b\\c'), 9, "a quote and a backslash are escaped");
    assert.equal(jsonBytes("\n\u0001"), 2 + 2 + 6, "a newline as \\n, a control character as \\u0001");
    assert.equal(jsonBytes("é€😀"), 2 + 2 + 3 + 4);
  });

  describe("cutting one line", () => {
    it("leaves a line that fits as it is, without an ellipsis", () => {
      assert.equal(cutToBytes("hello", 7), "hello");
    });

    it("keeps the longest start that fits with its ellipsis", () => {
      for (const line of ["x".repeat(100), "é".repeat(100), '"'.repeat(100), sampleLines(1, 7)[0] + "y".repeat(80)]) {
        for (const budget of [10, 11, 12, 33, 64]) {
          const cut = cutToBytes(line, budget);
          assert.ok(cut.endsWith("…"), `${budget}: ends with an ellipsis`);
          assert.ok(jsonBytes(cut) <= budget, `${budget}: ${jsonBytes(cut)} bytes`);
          const kept = cut.slice(0, -1);
          assert.ok(line.startsWith(kept), `${budget}: a start of the line`);
          const oneMore = line.slice(0, kept.length + 1);
          assert.ok(jsonBytes(oneMore + "…") > budget || /[\uD800-\uDBFF]$/.test(oneMore), `${budget}: the longest that fits`);
        }
      }
    });

    it("never keeps half of a surrogate pair", () => {
      const line = "😀".repeat(20);
      for (let budget = 6; budget < 40; budget++) {
        const kept = cutToBytes(line, budget).slice(0, -1);
        assert.ok(!/[\uD800-\uDBFF]$/.test(kept), `${budget}: ends in half an emoji`);
        assert.equal(Buffer.from(kept, "utf8").toString("utf8"), kept, `${budget}: survives UTF-8`);
      }
    });
  });

  it("notes lines cut in words, one and many", () => {
    assert.equal(cutNote(1), "[Outpost: 1 earlier line cut to fit]");
    assert.equal(cutNote(250), "[Outpost: 250 earlier lines cut to fit]");
  });

  describe("fitting a command's answer", () => {
    it("keeps every line, and adds no note, when they fit, up to the last byte", () => {
      const lines = ["aaa", "bbb", "ccc"];
      const exact = 2 + 3 * (jsonBytes("aaa") + 1);
      assert.deepEqual(fitLines(lines, exact), { lines, cut: 0 });
      assert.deepEqual(fitLines([], 2), { lines: [], cut: 0 });
    });

    it("drops the oldest lines one byte past the budget, and says how many first", () => {
      const lines = Array.from({ length: 20 }, (_, i) => `line ${String(i).padStart(2, "0")}`);
      const everything = 2 + lines.reduce((sum, line) => sum + jsonBytes(line) + 1, 0);
      const fitted = fitLines(lines, everything - 1);
      assert.ok(fitted.cut > 0);
      assert.equal(fitted.lines[0], cutNote(fitted.cut));
      assert.deepEqual(fitted.lines.slice(1), lines.slice(fitted.cut), "the newest, in order");
      assert.ok(arrayBytes(fitted.lines) <= everything - 1);
    });

    it("cuts short a newest line too long on its own rather than send nothing of it", () => {
      const fitted = fitLines(["older", "z".repeat(500)], 120);
      assert.equal(fitted.cut, 1);
      assert.equal(fitted.lines[0], cutNote(1));
      assert.match(fitted.lines[1], /^z+…$/);
      assert.ok(arrayBytes(fitted.lines) <= 120);
      assert.deepEqual(fitLines(["z".repeat(500)], 120).cut, 0, "nothing was dropped, so no note");
    });

    it("stays within its budget for any lines, keeping a run of the newest", () => {
      let dropped = 0;
      for (let seed = 1; seed <= 40; seed++) {
        const lines = sampleLines(1 + (seed % 30), seed);
        for (const budget of [100, 257, 1000, answerBudgetBytes]) {
          const { lines: out, cut } = fitLines(lines, budget);
          assert.ok(arrayBytes(out) <= budget, `seed ${seed}, budget ${budget}: ${arrayBytes(out)} bytes`);
          const kept = cut > 0 ? out.slice(1) : out;
          if (cut > 0) assert.equal(out[0], cutNote(cut));
          dropped += cut;
          assert.equal(cut + kept.length, lines.length, `seed ${seed}, budget ${budget}: every line kept or counted`);
          // The newest lines as they were; only the oldest kept may be cut short.
          assert.deepEqual(kept.slice(1), lines.slice(cut + 1));
          if (kept.length) assert.ok(kept[0] === lines[cut] || (kept[0].endsWith("…") && kept.length === 1));
        }
      }
      assert.ok(dropped > 0, "the sample has more lines than the smaller budgets take");
    });
  });

  describe("chunking live output", () => {
    it("passes every line on, in order, in batches each within the budget; only a line too long for a batch alone is cut short", () => {
      let cutShort = 0;
      for (let seed = 1; seed <= 40; seed++) {
        const lines = sampleLines(50, seed);
        for (const budget of [60, 300, answerBudgetBytes]) {
          const chunks = chunkLines(lines, budget);
          const passed = chunks.flat();
          assert.equal(passed.length, lines.length, `seed ${seed}, budget ${budget}: one line out for each line in`);
          passed.forEach((line, i) => {
            if (jsonBytes(lines[i]) + 3 <= budget) return assert.equal(line, lines[i], `seed ${seed}, budget ${budget}: line ${i} fits, and is as it was`);
            assert.ok(line.endsWith("…") && lines[i].startsWith(line.slice(0, -1)), `seed ${seed}, budget ${budget}: line ${i} cut short`);
            cutShort++;
          });
          for (const chunk of chunks) assert.ok(arrayBytes(chunk) <= budget, `seed ${seed}, budget ${budget}: ${arrayBytes(chunk)} bytes`);
          assert.ok(chunks.every((chunk) => chunk.length > 0));
        }
      }
      assert.ok(cutShort > 0, "the sample has lines too long for the smallest budget");
    });

    it("starts a new batch only when the next line would not fit", () => {
      const line = "x".repeat(8); // 10 bytes as JSON, 11 with its comma
      assert.deepEqual(
        chunkLines([line, line, line], 2 + 3 * 11).map((c) => c.length),
        [3],
      );
      assert.deepEqual(
        chunkLines([line, line, line], 2 + 3 * 11 - 1).map((c) => c.length),
        [2, 1],
      );
    });

    it("cuts short a line too long for a batch of its own, and sends nothing for no lines", () => {
      const [[cut]] = chunkLines(["y".repeat(1000)], 100);
      assert.match(cut, /^y+…$/);
      assert.ok(arrayBytes([cut]) <= 100);
      assert.deepEqual(chunkLines([], 100), []);
    });
  });
});
