/**
 * The configuration's tables, written from config-variables.ts: the README's (what each variable
 * does) and docs/deploy.md's (what a deployment of several instances sets). Each sits in its file
 * between two markers; `npm run docs:config` rewrites it there, and a test fails while a file's
 * table is not what the variables make.
 */
import { variables, type Variable, type VariableName } from "./config-variables.ts";

/** A table in a Markdown file: which file, and what its column of words says. */
export interface ConfigTable {
  /** The file, relative to the repository's root. */
  file: string;
  /** The marker's name: `<!-- config-table NAME: start … -->` and `<!-- config-table NAME: end -->`. */
  marker: string;
  render(): string;
}

const entries = () => Object.entries(variables) as Array<[VariableName, Variable<unknown>]>;

function cell(text: string, variable: string): string {
  if (/[|\n]/.test(text)) throw new Error(`${variable}: a table cell cannot hold "|" or a line break`);
  return text;
}

function shownDefault(variable: Variable<unknown>): string {
  if (variable.shown !== undefined) return variable.shown;
  return variable.default ? `\`${variable.default}\`` : "*(unset)*";
}

function table(header: string, rows: string[][]): string {
  const line = (cells: string[]) => `| ${cells.join(" | ")} |`;
  const columns = header.split(",");
  return [line(columns), line(columns.map(() => "---")).replaceAll(" ", ""), ...rows.map(line)].join("\n");
}

/** The README's table: every variable, its default and what it does. */
export function readmeTable(): string {
  return table(
    "variable,default,meaning",
    entries().map(([name, v]) => {
      const old = v.oldName ? `. \`${v.oldName}\`, its old name, is still read when this one is not set` : "";
      return [`\`${name}\``, cell(shownDefault(v), name), cell(v.doc + old, name)];
    }),
  );
}

/** docs/deploy.md's table: every variable, its default and what a deployment sets. */
export function deploymentTable(): string {
  return table(
    "variable,default,in a deployment",
    entries().map(([name, v]) => {
      const old = v.oldName ? ` (old name \`${v.oldName}\`)` : "";
      return [`\`${name}\`${old}`, cell(shownDefault(v), name), cell(v.deployment, name)];
    }),
  );
}

export const configTables: readonly ConfigTable[] = [
  { file: "README.md", marker: "readme", render: readmeTable },
  { file: "docs/deploy.md", marker: "deployment", render: deploymentTable },
];

const start = (marker: string) => `<!-- config-table ${marker}: start (npm run docs:config writes it from server/config-variables.ts) -->`;
const end = (marker: string) => `<!-- config-table ${marker}: end -->`;

/** Where the table's text is in the document: between the end of its start marker and its end marker. */
function bounds(document: string, t: ConfigTable): { from: number; to: number } {
  const from = document.indexOf(start(t.marker));
  const to = document.indexOf(end(t.marker));
  if (from < 0 || to < from) throw new Error(`${t.file} has no ${start(t.marker)} … ${end(t.marker)} markers`);
  return { from: from + start(t.marker).length, to };
}

/** The table between the file's markers now; throws when the markers are missing. */
export function tableIn(document: string, t: ConfigTable): string {
  const { from, to } = bounds(document, t);
  return document.slice(from, to).trim();
}

/** The document with the table between its markers rewritten. */
export function withTable(document: string, t: ConfigTable): string {
  const { from, to } = bounds(document, t);
  return `${document.slice(0, from)}\n${t.render()}\n${document.slice(to)}`;
}
