/**
 * The embedded database's starting point: PGlite's initdb and the migrations take seconds, so the
 * package ships a data directory that has been through both (a brotli-compressed tar made by
 * `npm run generate:embedded-template` from the migrations in core/db/migrations) and a first start
 * unpacks it instead. Start-up still runs `migrator.up()`, so migrations newer than the template
 * apply on top of it; test/server/embedded-template.test.ts fails while the template lags them.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, rmdirSync, writeFileSync } from "node:fs";
import { dirname, join, normalize, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { brotliDecompressSync } from "node:zlib";

const templateDir = fileURLToPath(new URL("./embedded-template/", import.meta.url));
export const templateFile = join(templateDir, "pglite-data.tar.br");
/** Which PGlite made the template: a data directory opens only with the PostgreSQL build that wrote it. */
export const templateInfoFile = join(templateDir, "pglite-data.json");

export interface TemplateInfo {
  pglite: string;
  postgres: string;
  /** The migrations the template has been through, in order. */
  migrations: string[];
}

/** A live cluster's lock file: meaningless in a copy, and a closed directory has none. */
const skipped = new Set(["postmaster.pid"]);

function octal(header: Buffer, offset: number, length: number): number {
  return parseInt(
    header
      .toString("latin1", offset, offset + length)
      .replace(/\0.*$/s, "")
      .trim() || "0",
    8,
  );
}

function field(header: Buffer, offset: number, length: number): string {
  return header.toString("utf8", offset, offset + length).replace(/\0.*$/s, "");
}

/**
 * Writes a ustar archive's directories and regular files under `into` (the only entries PGlite's
 * dump makes). Names that would leave `into` are refused: the archive is ours, but a reader that
 * trusts paths is a trap for the next archive it is handed.
 */
export function extractTar(tar: Buffer, into: string): void {
  for (let at = 0; at + 512 <= tar.length;) {
    const header = tar.subarray(at, at + 512);
    if (header.every((byte) => byte === 0)) break;
    const name = [field(header, 345, 155), field(header, 0, 100)].filter(Boolean).join("/").replace(/^\/+/, "");
    const size = octal(header, 124, 12);
    const type = String.fromCharCode(header[156] || 0x30);
    const path = normalize(join(into, name));
    if (path !== normalize(into) && !path.startsWith(normalize(into) + sep)) throw new Error(`archive entry ${name} is outside the directory`);
    if (type === "5") mkdirSync(path, { recursive: true, mode: 0o700 });
    else if (type === "0" && !skipped.has(name)) {
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
      writeFileSync(path, tar.subarray(at + 512, at + 512 + size), { mode: 0o600 });
    } else if (type !== "0") throw new Error(`archive entry ${name} has type ${type}, which the template never holds`);
    at += 512 + Math.ceil(size / 512) * 512;
  }
}

/**
 * Fills an empty `dataDir` from the shipped template; returns false (and leaves it to PGlite's
 * initdb) when the directory already holds something or there is no template. It unpacks beside
 * `dataDir` and renames, so a start killed halfway leaves no half-made cluster behind.
 */
export function prepareFromTemplate(dataDir: string): boolean {
  if (!existsSync(templateFile)) return false;
  if (existsSync(dataDir)) {
    if (readdirSync(dataDir).length > 0) return false;
    rmdirSync(dataDir);
  }
  const aside = `${dataDir}.unpacking-${process.pid}`;
  rmSync(aside, { recursive: true, force: true });
  try {
    extractTar(brotliDecompressSync(readFileSync(templateFile)), aside);
    renameSync(aside, dataDir);
  } finally {
    rmSync(aside, { recursive: true, force: true });
  }
  return true;
}
