/**
 * The text of a path in a server's directory as a client sends it (the files procedures, a grant's
 * file paths), checked before it comes near a file system: always relative to the server's
 * directory and `/`-separated. Anything that could mean a different place on some file system,
 * some platform or after one more decoding is refused rather than normalized, so what the owner
 * asked for, what core checks against grants and what the agent opens are the same thing. Core
 * and the agent both check with this, each throwing its own error.
 */

/** Linux's PATH_MAX and NAME_MAX, in UTF-8 bytes. */
export const maxPathBytes = 4096;
export const maxSegmentBytes = 255;

/**
 * Characters that look like `/`, `\` or `.` and that NFKC leaves as they are (those it changes are
 * refused as changed): division and fraction slashes, set minus, the big and reverse solidi.
 */
const lookAlikes = /[\u1735\u2044\u2215\u29f8\u2216\u29f5\u29f9\u0701\u0702\u2027\ua60e]/u;

/** Controls, formatting (bidi overrides, zero widths), line and paragraph separators. */
const invisibles = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;

/** A client's path taken apart: its segments, and the same joined by `/` ("" for the root). */
export interface ClientPath {
  segments: string[];
  relative: string;
}

/** Why a path is refused: text no file system should read (`invalid_path`), or a way out of the directory (`outside_root`). */
export class ClientPathError extends Error {
  override name = "ClientPathError";
  readonly reason: "invalid_path" | "outside_root";

  constructor(reason: "invalid_path" | "outside_root", message: string) {
    super(message);
    this.reason = reason;
  }
}

const invalid = (text: string, why: string) => new ClientPathError("invalid_path", `${JSON.stringify(text)} is not a valid path: ${why}`);
const outside = (text: string, why: string) => new ClientPathError("outside_root", `${JSON.stringify(text)} leads outside the server's directory: ${why}`);

/**
 * `text` as segments under the root, or a {@link ClientPathError}: `invalid_path` for text no one
 * should read, `outside_root` for `..`, absolute paths and drive letters in any spelling. "" and "." are
 * the root; one trailing `/` is allowed.
 */
export function parseClientPath(text: string): ClientPath {
  if (typeof text !== "string") throw invalid(String(text), "not text");
  if (Buffer.byteLength(text) > maxPathBytes) throw invalid(text.slice(0, 64), `longer than ${maxPathBytes} bytes`);
  checkCharacters(text, text);
  if (text === "" || text === ".") return { segments: [], relative: "" };
  if (text.startsWith("/")) throw outside(text, "absolute paths are not accepted");
  if (/^[a-z]:/i.test(text)) throw outside(text, "drive letters are not accepted");
  const body = text.endsWith("/") ? text.slice(0, -1) : text;
  const segments = body.split("/");
  for (const segment of segments) checkSegment(text, segment);
  return { segments, relative: segments.join("/") };
}

/** Refuses what no segment may hold, in the text as given and in every percent-decoding of it. */
function checkCharacters(text: string, whole: string): void {
  if (!text.isWellFormed()) throw invalid(whole, "it holds a lone surrogate");
  if (invisibles.test(text)) throw invalid(whole, "it holds a control or invisible character (NUL included)");
  if (text.includes("\\")) throw invalid(whole, "backslashes are not separators here; use /");
  if (text.normalize("NFKC") !== text) throw invalid(whole, "it holds characters that Unicode compatibility (NFKC) turns into others");
  if (lookAlikes.test(text)) throw invalid(whole, "it holds a character that looks like /, \\ or .");
}

function checkSegment(whole: string, segment: string): void {
  if (segment === "") throw invalid(whole, "empty segments (//) are not accepted");
  if (segment === "..") throw outside(whole, "'..' is not accepted");
  if (/^[. ]+$/.test(segment)) throw invalid(whole, "a segment of only dots and spaces is not accepted");
  if (Buffer.byteLength(segment) > maxSegmentBytes) throw invalid(whole, `a segment is longer than ${maxSegmentBytes} bytes`);
  const decoded = percentDecoded(segment);
  if (decoded === segment) return;
  // A name like "%2e%2e" is harmless to the file system, but a hop that decodes once more would
  // read it as "..": what it decodes to must pass the same checks.
  checkCharacters(decoded, whole);
  for (const part of decoded.split("/")) {
    if (part === "..") throw outside(whole, "it decodes to '..'");
    if (part === "" || /^[. ]+$/.test(part)) throw invalid(whole, "it decodes to an empty or dot segment");
  }
}

/** `segment` percent-decoded until it stops changing (at most a few rounds). */
function percentDecoded(segment: string): string {
  let current = segment;
  for (let round = 0; round < 4; round++) {
    let next: string;
    try {
      next = decodeURIComponent(current);
    } catch {
      next = current.replace(/%([0-9a-f]{2})/gi, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
    }
    if (next === current) return current;
    current = next;
  }
  return current;
}
