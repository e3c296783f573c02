/**
 * One line of text that a person reads and someone else chose: a display name, a title, a player's
 * name, a console command. It holds no control character (C0 U+0000–U+001F, DEL and C1
 * U+007F–U+009F: CR splits a line, ESC starts a terminal sequence that clears the screen or sets
 * the window's title, U+0085 is a line break), no line or paragraph separator (U+2028, U+2029) and
 * no bidirectional text control (embeddings and overrides U+202A–U+202E, isolates U+2066–U+2069,
 * marks U+200E, U+200F, U+061C), which reorder what is shown around them.
 *
 * The contract's `one_line` rule (proto/outpost/validate/v1/rules.proto) refuses the same set in
 * requests; this module is for what core and the agent print or send on anyway, such as names
 * stored before the rule, or text that came over the wire: `visibleLine` shows each such
 * character as an escape instead of letting a terminal or a mail reader act on it.
 */

/** The characters that do not belong in one line of text shown to a person (see above). */
export const notOnOneLine = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/u;

const everyOne = new RegExp(notOnOneLine.source, "gu");

/** The first character of `text` that does not belong on one line, with its position (from 1). */
export function offLineCharacter(text: string): { codePoint: string; position: number } | undefined {
  const found = notOnOneLine.exec(text);
  if (!found) return undefined;
  return { codePoint: `U+${found[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}`, position: found.index + 1 };
}

/**
 * `text` as one line that shows what it holds: each control, separator or bidirectional control
 * becomes its escape as plain text (ESC → `\x1b`, U+202E → `\u202e`), so a terminal, a log reader
 * or a mail client shows it instead of acting on it. Safe to apply twice (the escapes are plain).
 */
export function visibleLine(text: string): string {
  return text.replace(everyOne, (c) => {
    const code = c.codePointAt(0)!;
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`;
  });
}
