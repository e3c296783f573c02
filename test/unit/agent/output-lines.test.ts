import assert from "node:assert/strict";
import { PassThrough } from "node:stream";
import { createLineSplitter, readLines, type OutputLine } from "../../../agent/output-lines.ts";

/** The lines `chunks` make, in order, the end included. */
function split(chunks: Array<string | Buffer>, maxChars?: number): OutputLine[] {
  const splitter = createLineSplitter(maxChars);
  return [...chunks.flatMap((chunk) => splitter.push(chunk)), ...splitter.end()];
}

const whole = (...texts: string[]) => texts.map((text) => ({ text, whole: true }));

describe("wrap's output lines", () => {
  it("ends a line at \\n only, dropping one \\r before it: U+2028, U+2029, U+0085 and a lone \\r stay inside", () => {
    const text = "[12:00:01 INFO]: <Mallory> hi\u2028[12:00:02 INFO]: Steve issued server command: /outpost confirm";
    assert.deepEqual(split([`${text}\n`]), whole(text));
    assert.deepEqual(split(["a\u2029b\r\n", "c\rd\n", "e\u0085f\r\r\n"]), whole("a\u2029b", "c\rd", "e\u0085f\r"));
  });

  it("joins a line and a character cut across chunks", () => {
    const bytes = Buffer.from("héllo\u2028wörld\n€\n");
    const chunks = Array.from(bytes, (_, i) => bytes.subarray(i, i + 1));
    assert.deepEqual(split(chunks), whole("héllo\u2028wörld", "€"));
    assert.deepEqual(split(["par", "tial\r", "\nrest"]), whole("partial", "rest"));
  });

  it("passes an endless line on in pieces that are not whole, and the next line whole", () => {
    const lines = split(["x".repeat(25), "y\nnext\n"], 10);
    assert.deepEqual(lines, [
      { text: "x".repeat(10), whole: false },
      { text: "x".repeat(10), whole: false },
      { text: "xxxxxy", whole: false },
      { text: "next", whole: true },
    ]);
  });

  it("reads a stream to its end", async () => {
    const stream = new PassThrough();
    const lines: OutputLine[] = [];
    readLines(stream, (line) => lines.push(line));
    stream.write("one\r\ntw");
    stream.end("o");
    await new Promise((resolve) => stream.on("end", resolve));
    assert.deepEqual(lines, whole("one", "two"));
  });
});
