/**
 * An ESLint rule for the import cycles that import-x/no-cycle does not see: those closed by a
 * type-only import (`import type`, `export type … from`, or every specifier marked `type`).
 * import-x skips such declarations by design (they vanish at run time), but a ring of modules
 * that need each other's types is still a ring: neither can be understood, moved or tested
 * alone, and it grows into a value cycle with the first value import.
 *
 * The rule reads every TypeScript file under the project's source folders once per run (the
 * import specifiers only, through TypeScript's pre-processor), and reports a type-only import
 * whose target imports the importer back, through any chain of imports. A cycle made only of
 * value imports is import-x's to report; every cycle with a type-only import in it is reported
 * here, at that import, with the whole ring.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, relative, resolve } from "node:path";
import type { Rule } from "eslint";
import ts from "typescript";

type Graph = Map<string, string[]>;

/** The folders whose modules may import one another (gen/ imports nothing of ours). */
const sourceRoots = ["agent", "bench", "contract", "core", "edge", "scripts", "server", "test"];

const graphs = new Map<string, Graph>();

function typeScriptFiles(folder: string, into: string[] = []): string[] {
  let entries;
  try {
    entries = readdirSync(folder, { withFileTypes: true });
  } catch {
    return into;
  }
  for (const entry of entries) {
    const path = resolve(folder, entry.name);
    if (entry.isDirectory()) typeScriptFiles(path, into);
    else if (entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts")) into.push(path);
  }
  return into;
}

/** Every source module's relative imports, resolved to files (built once per run and project). */
function importGraph(cwd: string): Graph {
  let graph = graphs.get(cwd);
  if (graph) return graph;
  const files = sourceRoots.flatMap((root) => typeScriptFiles(resolve(cwd, root)));
  const known = new Set(files);
  graph = new Map();
  for (const file of files) {
    const { importedFiles } = ts.preProcessFile(readFileSync(file, "utf8"), true, true);
    const targets = importedFiles.filter(({ fileName }) => fileName.startsWith(".")).map(({ fileName }) => resolve(dirname(file), fileName));
    graph.set(file, [...new Set(targets.filter((target) => known.has(target)))]);
  }
  graphs.set(cwd, graph);
  return graph;
}

/** The shortest chain of imports from `from` to `to`, both included; undefined when there is none. */
function chain(graph: Graph, from: string, to: string): string[] | undefined {
  const previous = new Map<string, string>([[from, from]]);
  const queue = [from];
  while (queue.length > 0) {
    const module = queue.shift()!;
    if (module === to) {
      const path = [to];
      while (path[0] !== from) path.unshift(previous.get(path[0])!);
      return path;
    }
    for (const next of graph.get(module) ?? []) {
      if (previous.has(next)) continue;
      previous.set(next, module);
      queue.push(next);
    }
  }
  return undefined;
}

type SourceDeclaration = { importKind?: string; exportKind?: string; specifiers?: Array<{ importKind?: string; exportKind?: string }> };

function typeOnly(node: SourceDeclaration): boolean {
  if (node.importKind === "type" || node.exportKind === "type") return true;
  const specifiers = node.specifiers ?? [];
  return specifiers.length > 0 && specifiers.every((s) => s.importKind === "type" || s.exportKind === "type");
}

export const typeImportCycles: Rule.RuleModule = {
  meta: {
    type: "problem",
    docs: { description: "Forbid a type-only import whose module imports this one back (import-x/no-cycle does not count type imports)." },
    schema: [],
    messages: { cycle: "Type-only import cycle: {{ring}}. Move the shared type to a module both can import, or beside what owns it." },
  },
  create(context) {
    const file = resolve(context.physicalFilename);
    const check = (node: Rule.Node & { source?: { value?: unknown } | null }) => {
      const specifier = node.source?.value;
      if (typeof specifier !== "string" || !specifier.startsWith(".")) return;
      if (!typeOnly(node as SourceDeclaration)) return;
      const graph = importGraph(context.cwd);
      const back = chain(graph, resolve(dirname(file), specifier), file);
      if (!back) return;
      const ring = [file, ...back].map((module) => relative(context.cwd, module)).join(" → ");
      context.report({ node, messageId: "cycle", data: { ring } });
    };
    return { ImportDeclaration: check, ExportNamedDeclaration: check, ExportAllDeclaration: check };
  },
};

/** The plugin, as the flat config names it. */
export default { rules: { "type-import-cycles": typeImportCycles } };
