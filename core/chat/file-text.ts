/**
 * A text file as the assistant handles it, in pure functions: the part of it one read fits in the
 * model's context, the line diff a person is shown before a change, and a model's unified edit
 * applied to the version read. The diffs are the `diff` package's (Myers, as git's default), not
 * our own: a diff a person allows a change by must be right in every corner (no final newline,
 * line endings, repeated lines).
 */
import { applyPatch, formatPatch, parsePatch, structuredPatch, FILE_HEADERS_ONLY, type StructuredPatch } from "diff";

/** The most of a file's text one read gives the model, counted as JSON (a tool's result is cut at 8,000: prompt.ts). */
export const excerptBudget = 6_000;

export interface Excerpt {
  /** Lines `startLine` to `endLine`, each with its line break. */
  content: string;
  startLine: number;
  endLine: number;
  totalLines: number;
  /** Lines follow that did not fit, or line `endLine` itself was cut. */
  truncated: boolean;
  /** Line `endLine` alone is longer than the budget: only its beginning is here. */
  lineCut: boolean;
}

/** The lines of `text`, each with its line break (the last may have none). */
function linesOf(text: string): string[] {
  const lines = text.split("\n").map((line) => `${line}\n`);
  const last = lines.pop()!.slice(0, -1);
  return last === "" ? lines : [...lines, last];
}

const jsonLength = (text: string) => JSON.stringify(text).length - 2;

/** The lines of `text` from `startLine` (from 1) that fit in `budget` characters of JSON; a first line that alone does not is cut. */
export function excerpt(text: string, startLine = 1, budget = excerptBudget): Excerpt {
  const lines = linesOf(text);
  const taken: string[] = [];
  let used = 0;
  for (const line of lines.slice(startLine - 1)) {
    const size = jsonLength(line);
    if (used + size > budget) {
      if (taken.length === 0) return { content: cutToBudget(line, budget), startLine, endLine: startLine, totalLines: lines.length, truncated: true, lineCut: true };
      break;
    }
    taken.push(line);
    used += size;
  }
  const endLine = startLine + taken.length - 1;
  return { content: taken.join(""), startLine, endLine, totalLines: lines.length, truncated: endLine < lines.length, lineCut: false };
}

function cutToBudget(line: string, budget: number): string {
  let end = Math.min(line.length, budget);
  while (end > 0 && jsonLength(line.slice(0, end)) > budget) end = Math.floor(end * 0.9);
  // Never half of a surrogate pair.
  if (end > 0 && /[\uD800-\uDBFF]/.test(line[end - 1])) end--;
  return line.slice(0, end);
}

/** The most a diff shown in the Allow box may hold: a larger change is not proposed (a person could not review it there). */
export const maxDiffChars = 20_000;
/** Lines from the first to the last changed one, on either side, past which the change is not diffed at all. */
export const maxSpanLines = 2_000;
/** Lines added and removed past which the diff is given up (it would be longer than a person can review). */
const maxEditLines = 400;
/** How long working out a diff may take; it yields to other work meanwhile. */
const diffTimeoutMs = 2_000;
/** Unchanged lines shown around each change. */
const context = 3;

export interface LineDiff {
  /** Unified, `--- a/<path>` / `+++ b/<path>`, 3 lines of context. */
  diff: string;
  added: number;
  removed: number;
}

/**
 * The line diff from `before` to `after`, or undefined when it is larger than a person can be
 * shown. Only the span from the first to the last changed line is handed to the diff (with its
 * context), its hunks then numbered in the whole file: a few changed lines of a long file cost
 * what they are, not what the file is.
 */
export async function lineDiff(path: string, before: string, after: string): Promise<LineDiff | undefined> {
  const [a, b] = [linesOf(before), linesOf(after)];
  let same = 0;
  while (same < a.length && same < b.length && a[same] === b[same]) same++;
  let sameAtEnd = 0;
  while (sameAtEnd < a.length - same && sameAtEnd < b.length - same && a[a.length - 1 - sameAtEnd] === b[b.length - 1 - sameAtEnd]) sameAtEnd++;
  if (Math.max(a.length, b.length) - same - sameAtEnd > maxSpanLines) return undefined;
  const from = Math.max(0, same - context);
  const span = (lines: string[]) => lines.slice(from, lines.length - Math.max(0, sameAtEnd - context)).join("");
  const patch = await new Promise<StructuredPatch | undefined>((resolve) =>
    structuredPatch(`a/${path}`, `b/${path}`, span(a), span(b), undefined, undefined, {
      context,
      maxEditLength: maxEditLines,
      timeout: diffTimeoutMs,
      callback: resolve,
    }),
  );
  if (!patch) return undefined;
  for (const hunk of patch.hunks) {
    hunk.oldStart += from;
    hunk.newStart += from;
  }
  const diff = formatPatch(patch, FILE_HEADERS_ONLY);
  if (diff.length > maxDiffChars) return undefined;
  const lines = patch.hunks.flatMap((h) => h.lines);
  return { diff, added: lines.filter((l) => l.startsWith("+")).length, removed: lines.filter((l) => l.startsWith("-")).length };
}

/**
 * `before` with a unified diff of one file applied, its context matching exactly (no fuzz: a
 * change lands where the model saw it or not at all), or why not.
 */
export function applyUnifiedEdit(before: string, patch: string): { after: string } | { problem: string } {
  let parsed: StructuredPatch[];
  try {
    parsed = parsePatch(patch);
  } catch (error) {
    return { problem: `the patch is not a unified diff that can be read (${(error as Error).message.trim()}); each hunk's @@ line must count its lines` };
  }
  if (parsed.length !== 1) return { problem: "the patch must change one file, the one named by path" };
  if (parsed[0].hunks.length === 0) return { problem: "the patch holds no hunk (@@ -start,count +start,count @@ and its lines)" };
  const after = applyPatch(before, parsed[0]);
  if (after === false) return { problem: "the patch does not apply to the file as it is now: its context or removed lines differ; read the file again" };
  return { after };
}
