/**
 * Console lines kept within a size: a command's output travels between instances in a PostgreSQL
 * notification, whose payload PostgreSQL caps at 8,000 bytes. So that an answer does not depend
 * on which instance the call reached, every answer is cut to {@link answerBudgetBytes} (JSON),
 * wherever its agent is: the oldest lines go, and a first line says how many.
 */

/** The JSON of a command's output (and its error) stays within this many bytes. */
export const answerBudgetBytes = 6_000;

/** The bytes a string takes inside a JSON document, quotes and escapes included. */
export function jsonBytes(value: string): number {
  return Buffer.byteLength(JSON.stringify(value), "utf8");
}

/** The longest start of `line` whose JSON takes at most `budget` bytes, with "…" when cut. */
export function cutToBytes(line: string, budget: number): string {
  if (jsonBytes(line) <= budget) return line;
  let low = 0;
  let high = line.length;
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    if (jsonBytes(line.slice(0, mid) + "…") <= budget) low = mid;
    else high = mid - 1;
  }
  // Never half of a surrogate pair.
  const end = /[\uD800-\uDBFF]/.test(line.charAt(low - 1)) ? low - 1 : low;
  return line.slice(0, end) + "…";
}

/** The note that stands first in place of lines cut. */
export function cutNote(count: number): string {
  return `[Outpost: ${count} earlier line${count === 1 ? "" : "s"} cut to fit]`;
}

/**
 * The newest lines whose JSON fits in `budget` bytes (each line's quotes and separating comma
 * counted); with a first line saying how many were cut, when any were. A last line too long on
 * its own is cut short.
 */
export function fitLines(lines: readonly string[], budget: number): { lines: string[]; cut: number } {
  const kept: string[] = [];
  // The note's own size is reserved whenever anything might be cut.
  const total = lines.reduce((sum, line) => sum + jsonBytes(line) + 1, 2);
  const room = total <= budget ? budget : budget - jsonBytes(cutNote(lines.length)) - 1;
  let used = 2;
  for (let i = lines.length - 1; i >= 0; i--) {
    const size = jsonBytes(lines[i]) + 1;
    if (used + size > room) {
      if (kept.length === 0) kept.unshift(cutToBytes(lines[i], room - used - 1));
      break;
    }
    used += size;
    kept.unshift(lines[i]);
  }
  const cut = lines.length - kept.length;
  return { lines: cut > 0 ? [cutNote(cut), ...kept] : kept, cut };
}

/**
 * All of `lines`, in order, in batches whose JSON fits in `budget` bytes each (a line too long
 * on its own is cut short), for live output that must not lose lines to the size of a message.
 */
export function chunkLines(lines: readonly string[], budget: number): string[][] {
  const chunks: string[][] = [];
  let chunk: string[] = [];
  let used = 2;
  for (const line of lines) {
    const fitted = jsonBytes(line) + 1 > budget - 2 ? cutToBytes(line, budget - 3) : line;
    const size = jsonBytes(fitted) + 1;
    if (chunk.length && used + size > budget) {
      chunks.push(chunk);
      chunk = [];
      used = 2;
    }
    chunk.push(fitted);
    used += size;
  }
  if (chunk.length) chunks.push(chunk);
  return chunks;
}
