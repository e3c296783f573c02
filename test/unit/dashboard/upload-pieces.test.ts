import assert from "node:assert/strict";
import { pieces, uploadMessages, uploadPieceBytes } from "../../../edge/upload-pieces.ts";

async function collect<T>(source: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of source) out.push(item);
  return out;
}

async function* chunks(...sizes: number[]): AsyncGenerator<Uint8Array> {
  let n = 0;
  for (const size of sizes) yield Uint8Array.from({ length: size }, () => n++ % 251);
}

/** How the upload form's file becomes servers/uploadFile's messages: the header, then pieces of at most 1 MiB. */
describe("dashboard: an uploaded file in pieces", () => {
  it("joins small chunks and cuts large ones at 1 MiB, keeping every byte in order", async () => {
    const sizes = [65_536, 3, uploadPieceBytes * 2 + 5, 700_000, 1];
    const out = await collect(pieces(chunks(...sizes)));
    const total = sizes.reduce((a, b) => a + b, 0);
    const whole = Math.floor(total / uploadPieceBytes);
    assert.equal(whole, 2);
    assert.deepEqual(
      out.map((p) => p.length),
      [uploadPieceBytes, uploadPieceBytes, total - whole * uploadPieceBytes],
    );
    assert.deepEqual(Buffer.concat(out), Buffer.concat(await collect(chunks(...sizes))));
  });

  it("sends nothing after the header for an empty file, and the header first always", async () => {
    const messages = await collect(uploadMessages({ serverId: "s", path: "a/b.txt" }, chunks()));
    assert.deepEqual(messages, [{ part: { case: "header", value: { serverId: "s", path: "a/b.txt" } } }]);
    const some = await collect(uploadMessages({ serverId: "s", path: "x" }, chunks(10)));
    assert.deepEqual(
      some.map((m) => m.part?.case),
      ["header", "data"],
    );
  });
});
