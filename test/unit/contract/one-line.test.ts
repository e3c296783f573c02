/**
 * Text someone else chose, printed as one line (contract/one-line.ts): the agent's terminal
 * lines, and every email, show each control character, line separator and bidirectional control
 * as an escape instead of letting a terminal or a mail reader act on it. The contract's one_line
 * rule refuses the same set (test/unit/core/validation-messages.test.ts holds them together);
 * test/agent/wrap.test.ts reads such a line off the real agent's terminal.
 */
import assert from "node:assert/strict";
import { notOnOneLine, offLineCharacter, visibleLine } from "../../../contract/one-line.ts";

describe("unit: one line of text, shown as it is", () => {
  it("shows a terminal's controls and the line breaks as escapes, as plain text", () => {
    assert.equal(
      visibleLine("Lobby\u001b]0;owned\u0007\u001b[2J\rX\nY\u0085Z\u2028\u2029\u202eevil\u200f\u061c\u2066\u007f\u0000"),
      "Lobby\\x1b]0;owned\\x07\\x1b[2J\\x0dX\\x0aY\\x85Z\\u2028\\u2029\\u202eevil\\u200f\\u061c\\u2066\\x7f\\x00",
    );
    assert.equal(visibleLine("tab\there"), "tab\\x09here");
  });

  it("leaves other text as it is: accents, right-to-left script, emoji, and a backslash already there", () => {
    for (const text of ["Steve", "héllo wörld — ok", "שלום مرحبا", "😀 中文", "C:\\x1b is just text", ""]) assert.equal(visibleLine(text), text);
  });

  it("shows nothing a terminal could act on, whatever it is given, and is the same applied twice", () => {
    for (let cp = 0; cp < 0x3000; cp++) {
      const text = `a${String.fromCodePoint(cp)}b`;
      const shown = visibleLine(text);
      assert.ok(!notOnOneLine.test(shown), `U+${cp.toString(16)}`);
      assert.equal(visibleLine(shown), shown, `U+${cp.toString(16)}: twice`);
      assert.equal(shown === text, !notOnOneLine.test(text), `U+${cp.toString(16)}: changed only when it had to be`);
    }
  });

  it("names the first character off the line, by code point and position from 1", () => {
    assert.equal(offLineCharacter("say hi"), undefined);
    assert.deepEqual(offLineCharacter("say a\nop me\r"), { codePoint: "U+000A", position: 6 });
    assert.deepEqual(offLineCharacter("\u202etxt.exe"), { codePoint: "U+202E", position: 1 });
    assert.deepEqual(offLineCharacter("ok\u0085"), { codePoint: "U+0085", position: 3 });
  });
});
