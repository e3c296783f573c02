import assert from "node:assert/strict";
import { PassThrough } from "node:stream";
import { PromptAborted, readPassword, type PasswordInput } from "../../../server/password-prompt.ts";

/** A terminal: stdin that can be put in raw mode (recorded), and what the prompt writes. */
function terminal() {
  const input = new PassThrough() as PassThrough & PasswordInput;
  const modes: boolean[] = [];
  input.isTTY = true;
  input.setRawMode = (raw: boolean) => modes.push(raw);
  const output = new PassThrough();
  let shown = "";
  output.on("data", (d) => (shown += d));
  return { input, output, modes, shown: () => shown };
}

/** Types `keys` once the prompt asked (each string one chunk, as a terminal delivers keys or a paste). */
async function type(input: PassThrough, ...keys: string[]): Promise<void> {
  for (const key of keys) {
    await new Promise((resolve) => setImmediate(resolve));
    input.write(key);
  }
}

describe("outpost user create's password prompt", () => {
  it("asks twice in raw mode, echoes none of the typing, and edits with Backspace and Ctrl-U", async () => {
    const t = terminal();
    const read = readPassword(t.input, t.output);
    await type(t.input, "wrong", "\u0015", "correct horse", "x\u007f", " battery\r", "correct horse battery\r");
    assert.equal(await read, "correct horse battery");
    assert.equal(t.shown(), "Password: \nThe same password again: \n");
    assert.deepEqual(t.modes, [true, false, true, false], "raw mode ends after each answer");
  });

  it("refuses two answers that differ, and gives up on Ctrl-C", async () => {
    const differ = terminal();
    const read = readPassword(differ.input, differ.output);
    await type(differ.input, "one passphrase\r", "another one\r");
    await assert.rejects(read, /the two passwords differ; nothing was created/);

    const cancelled = terminal();
    const given = readPassword(cancelled.input, cancelled.output);
    await type(cancelled.input, "half typ", "\u0003");
    await assert.rejects(given, PromptAborted);
    assert.deepEqual(cancelled.modes, [true, false]);
  });

  it("answers empty on an empty first answer, for the caller to say how to give one", async () => {
    const t = terminal();
    const read = readPassword(t.input, t.output);
    await type(t.input, "\r");
    assert.equal(await read, "");
  });
});
