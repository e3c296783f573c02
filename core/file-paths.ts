/**
 * Where a grant's file actions reach (issue 29): its constraints.file_paths, each a selector under
 * the server's directory, "/"-separated and case-sensitive. A selector without glob characters
 * (`* ? [ ] { }`) covers that path and everything under it; one ending in "/**" covers what its
 * part before matches and everything under that (so "plugins/Essentials/**" is "plugins/Essentials"),
 * dotfiles included; any other glob is matched against the whole path by node:path `matchesGlob`
 * (whose wildcards skip names starting with "."). No selectors: the whole directory.
 *
 * A path here is a client path as the agent normalizes it (agent/files/client-path.ts): relative,
 * "/"-separated, "" for the server's directory. The check is on that text; the agent keeps the
 * path inside the server's directory.
 */
import { posix } from "node:path";

const globCharacters = /[*?[\]{}]/;
/** What matchesGlob reads as a pattern in a segment (extglobs as well as our glob characters). */
const patternCharacters = /[*?[\]{}()!+@|]/;
const invisibles = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;

/** The caller's reach among a server's files; see the module's comment for what a selector covers. */
export interface FilePathAccess {
  /** Whether it reaches every path (an owner or admin, or a grant without file paths). */
  readonly everywhere: boolean;
  /**
   * Whether the file actions may touch `path`: a normalized client path, "" for the server's
   * directory. A path that is not normalized (a ".", ".." or empty segment, a leading or trailing
   * "/", a backslash) is refused rather than read, so normalize before asking.
   */
  allows(path: string): boolean;
  /**
   * Whether the file actions may touch `path` and everything a folder there could hold: what moving
   * or deleting a folder with its contents needs. A folder selector ("plugins/Essentials",
   * "plugins/Essentials/**") covers all under it; a file glob ("plugins/*.jar") does not.
   */
  allowsAllUnder(path: string): boolean;
  /**
   * Whether the member may list `directory`: it is allowed, or it lies on the way to a selector
   * ("" and "plugins" lead to "plugins/Essentials/**"), so they can browse down to what they hold.
   */
  reaches(directory: string): boolean;
  /** Whether a listing of `directory` shows its entry `name`: allowed, or a directory on the way to a selector. */
  visibleEntry(directory: string, name: string, isDirectory: boolean): boolean;
}

/** An owner's or admin's reach, and a grant's without file paths: everything. */
export const everywhereAccess: FilePathAccess = Object.freeze({
  everywhere: true,
  allows: () => true,
  allowsAllUnder: () => true,
  reaches: () => true,
  visibleEntry: () => true,
});

/** A stored selector, taken apart for matching. */
interface Selector {
  text: string;
  /** Its segments; for a subtree, those of its part before "/**" ("**" alone: none). */
  segments: string[];
  /** Whether it covers everything under what its segments match. */
  subtree: boolean;
  /** Whether its segments are patterns (else plain names, compared as text). */
  glob: boolean;
}

function compile(text: string): Selector {
  if (!globCharacters.test(text)) return { text, segments: text.split("/"), subtree: true, glob: false };
  if (text === "**") return { text, segments: [], subtree: true, glob: true };
  if (text.endsWith("/**")) {
    const base = text.slice(0, -3);
    return { text, segments: base.split("/"), subtree: true, glob: globCharacters.test(base) };
  }
  return { text, segments: text.split("/"), subtree: false, glob: true };
}

const segmentsOf = (path: string) => (path === "" ? [] : path.split("/"));

/** Whether `path` is as the agent normalizes one: anything else could name another place than its text. */
const normalized = (path: string) => path === "" || (!path.includes("\\") && path.split("/").every((name) => name !== "" && name !== "." && name !== ".."));
const segmentMatches = (name: string, segment: string, glob: boolean) => (glob ? posix.matchesGlob(name, segment) : name === segment);

function covers(s: Selector, path: string): boolean {
  if (!s.subtree) return path !== "" && posix.matchesGlob(path, s.text);
  const names = segmentsOf(path);
  if (s.glob && s.segments.includes("**")) {
    // A "**" inside the base spans any number of names: try the path and each of its ancestors.
    const base = s.segments.join("/");
    return names.some((_, i) => posix.matchesGlob(names.slice(0, i + 1).join("/"), base));
  }
  return names.length >= s.segments.length && s.segments.every((segment, i) => segmentMatches(names[i], segment, s.glob));
}

/** Whether `directory` lies above something `s` covers: each of its names matches the selector's so far. */
function leadsTo(s: Selector, directory: string): boolean {
  const names = segmentsOf(directory);
  for (let i = 0; i < Math.min(names.length, s.segments.length); i++) {
    if (s.glob && s.segments[i] === "**") return true;
    if (!segmentMatches(names[i], s.segments[i], s.glob)) return false;
  }
  return names.length < s.segments.length;
}

/** The reach of a grant's file paths (stored selectors); none: everywhere. */
export function filePathAccess(selectors: readonly string[]): FilePathAccess {
  if (!selectors.length) return everywhereAccess;
  const compiled = selectors.map(compile);
  const allows = (path: string) => normalized(path) && compiled.some((s) => covers(s, path));
  const reaches = (directory: string) => normalized(directory) && (allows(directory) || compiled.some((s) => leadsTo(s, directory)));
  return {
    everywhere: false,
    allows,
    allowsAllUnder: (path) => normalized(path) && compiled.some((s) => s.subtree && covers(s, path)),
    reaches,
    visibleEntry: (directory, name, isDirectory) => {
      const path = directory === "" ? name : `${directory}/${name}`;
      return allows(path) || (isDirectory && reaches(path));
    },
  };
}

/**
 * `text` as a selector is stored (one trailing "/" dropped), or why it cannot be one: it must be
 * relative and "/"-separated, without empty, "." or ".." segments, backslashes or invisible
 * characters, and a `{…}` group may not hold a "/" (the checks go segment by segment).
 */
export function parseFileSelector(text: string): { selector: string } | { problem: string } {
  if (invisibles.test(text) || !text.isWellFormed()) return { problem: "holds a control or invisible character" };
  if (text.includes("\\")) return { problem: "holds a backslash; separate folders with /" };
  if (text.startsWith("/")) return { problem: "must be relative to the server's directory, without a leading /" };
  const selector = text.endsWith("/") ? text.slice(0, -1) : text;
  if (selector === "") return { problem: "is empty" };
  const segments = selector.split("/");
  if (segments.includes("")) return { problem: "has an empty segment (//)" };
  if (segments.some((s) => s === "." || s === "..")) return { problem: `has a "." or ".." segment` };
  if (/\{[^}]*\//.test(selector)) return { problem: "has a / inside {…}; list each path on its own instead" };
  return { selector };
}

/**
 * Whether everything `narrow` covers is covered by `wide` (both stored selectors), as far as can
 * be told from their text: an approval's path must be within one the request asked for. When it
 * cannot be told (two different globs at one segment, a "**" inside `wide`), the answer is no.
 */
export function selectorWithin(narrow: string, wide: string): boolean {
  if (narrow === wide) return true;
  const n = compile(narrow);
  const w = compile(wide);
  if (w.subtree && !w.segments.length) return true;
  if (w.glob && w.segments.includes("**")) return false;
  if (n.segments.length < w.segments.length) return false;
  if (!w.subtree && (n.subtree || n.segments.length !== w.segments.length)) return false;
  return w.segments.every((segment, i) => segmentWithin(n.segments[i], n.glob, segment, w.glob));
}

/** Whether every name that narrow's segment matches, wide's matches too. */
function segmentWithin(narrow: string, narrowGlob: boolean, wide: string, wideGlob: boolean): boolean {
  const literal = !narrowGlob || !patternCharacters.test(narrow);
  if (!literal) return narrow === wide && wideGlob;
  return segmentMatches(narrow, wide, wideGlob);
}
