import assert from "node:assert/strict";
import { Writable } from "node:stream";
import { createLogger } from "../../../server/logger.ts";

/** A terminal (or not) that keeps what is written to it. */
function terminal(isTTY: boolean): NodeJS.WriteStream & { text(): string } {
  let text = "";
  const stream = new Writable({
    write(chunk, _encoding, done) {
      text += chunk;
      done();
    },
  });
  return Object.assign(stream, { isTTY, hasColors: () => false, text: () => text }) as unknown as NodeJS.WriteStream & { text(): string };
}

describe("the serving process's log", () => {
  it("prints records readably on a terminal, with their fields (the request id among them)", async () => {
    const out = terminal(true);
    const logger = createLogger("info", out);
    logger.child({ requestId: "req-12345678" }).info({ status: 200 }, "request");
    logger.debug("not at info");
    await new Promise((resolve) => setImmediate(resolve));
    const text = out.text();
    assert.match(text, /INFO.*: request\n/);
    assert.match(text, /requestId: "req-12345678"/);
    assert.match(text, /status: 200/);
    assert.doesNotMatch(text, /not at info/);
    assert.throws(() => JSON.parse(text.split("\n")[0]));
  });
});
