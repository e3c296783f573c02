/**
 * What a plugin's or mod's jar says about itself, read from its descriptor (`paper-plugin.yml`,
 * `plugin.yml`, `fabric.mod.json`) without unpacking it: yauzl reads the zip's central directory
 * one entry at a time from the opened file, and only the descriptor is inflated, refused past
 * 256 KiB whatever its header claims, so a jar of any size, or a zip bomb, costs little memory.
 * Every field comes back within the contract's bounds (resources.proto, message Plugin).
 */
import type { FileHandle } from "node:fs/promises";
import { Readable } from "node:stream";
import { parse as parseYaml } from "yaml";
import { RandomAccessReader, fromRandomAccessReaderPromise, type Entry, type ZipFile } from "yauzl";
import { visibleLine } from "../../contract/one-line.ts";

/** Which descriptor a jar was described by ("" when none could be read). */
export type PluginLoader = "bukkit" | "paper" | "fabric" | "";

/** A jar's description, each field cut to what the contract carries ("" or none when not declared). */
export interface JarDescription {
  loader: PluginLoader;
  name: string;
  version: string;
  authors: string[];
  description: string;
  /** plugin.yml's api-version, or the Minecraft versions a Fabric mod depends on. */
  apiVersion: string;
}

/** A descriptor's file name, at the root of the jar. */
export type DescriptorName = "paper-plugin.yml" | "plugin.yml" | "fabric.mod.json";

/** The largest descriptor read, uncompressed. */
export const maxDescriptorBytes = 256 * 1024;
/** Entries of a jar's central directory looked through for its descriptor (a big mod holds some 20,000). */
export const maxEntriesScanned = 200_000;

/** Why a jar's description could not be read, said for its owner (shown as Plugin.problem). */
export class JarProblem extends Error {
  override name = "JarProblem";
}

/**
 * The description of the jar open at `handle` (`size` bytes), from the first descriptor of
 * `preference` that it holds. Throws a JarProblem, or yauzl's or zlib's error for a file that is
 * not a readable zip; the caller closes the handle.
 */
export async function readJarDescription(handle: FileHandle, size: number, preference: readonly DescriptorName[]): Promise<JarDescription> {
  const zip = await fromRandomAccessReaderPromise(new HandleReader(handle), size, { autoClose: false, decodeStrings: false, validateEntrySizes: true });
  try {
    const found = await findDescriptor(zip, preference);
    if (!found) throw new JarProblem(`it holds no ${preference.slice(0, -1).join(", ")} or ${preference[preference.length - 1]}`);
    const text = await readEntryText(zip, found.entry, found.name);
    return found.name === "fabric.mod.json" ? fabricDescription(text) : yamlDescription(text, found.name === "paper-plugin.yml" ? "paper" : "bukkit");
  } finally {
    zip.close();
  }
}

/** The most preferred descriptor among the jar's entries (its root only), looking through at most maxEntriesScanned. */
async function findDescriptor(zip: ZipFile, preference: readonly DescriptorName[]): Promise<{ name: DescriptorName; entry: Entry } | undefined> {
  const found = new Map<DescriptorName, Entry>();
  let scanned = 0;
  for await (const entry of zip.eachEntry()) {
    // decodeStrings off: names are bytes, never validated or decoded (a jar with odd names still reads).
    const name = preference.find((wanted) => entry.fileNameRaw.equals(Buffer.from(wanted)));
    if (name && !found.has(name)) found.set(name, entry);
    if (found.has(preference[0]) || ++scanned >= maxEntriesScanned) break;
  }
  const name = preference.find((wanted) => found.has(wanted));
  return name && { name, entry: found.get(name)! };
}

/** The entry's bytes as UTF-8 text, refused (and not inflated) past maxDescriptorBytes. */
async function readEntryText(zip: ZipFile, entry: Entry, name: DescriptorName): Promise<string> {
  const tooLarge = () => new JarProblem(`its ${name} is larger than ${maxDescriptorBytes / 1024} KiB, so it is not read`);
  if (entry.uncompressedSize > maxDescriptorBytes) throw tooLarge();
  if (!entry.canDecodeFileData()) throw new JarProblem(`its ${name} is encrypted or compressed in a way the agent does not read`);
  const stream = await zip.openReadStreamPromise(entry);
  const chunks: Buffer[] = [];
  let total = 0;
  // yauzl also stops a stream that inflates past the size its header claims; this bound holds regardless.
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    total += chunk.length;
    if (total > maxDescriptorBytes) throw tooLarge();
    chunks.push(chunk);
  }
  return new TextDecoder("utf-8").decode(Buffer.concat(chunks));
}

type Json = unknown;

/** plugin.yml (Bukkit, Spigot) or paper-plugin.yml: every scalar read as the text written (`version: 1.10` stays "1.10"). */
function yamlDescription(text: string, loader: "bukkit" | "paper"): JarDescription {
  const name = loader === "paper" ? "paper-plugin.yml" : "plugin.yml";
  let parsed: Json;
  try {
    parsed = parseYaml(text, { schema: "failsafe", uniqueKeys: false, maxAliasCount: 100, prettyErrors: false });
  } catch (error) {
    throw new JarProblem(`its ${name} is not valid YAML: ${firstLine(error)}`, { cause: error });
  }
  const fields = record(parsed);
  if (!fields) throw new JarProblem(`its ${name} is not a map of fields`);
  return bounded({
    loader,
    name: stringOf(fields.name),
    version: stringOf(fields.version),
    authors: [stringOf(fields.author), ...listOf(fields.authors).map(stringOf)],
    description: stringOf(fields.description),
    apiVersion: stringOf(fields["api-version"]),
  });
}

/** fabric.mod.json: authors as names or `{name, contact}`, and `depends.minecraft` as the versions it runs on. */
function fabricDescription(text: string): JarDescription {
  let parsed: Json;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new JarProblem(`its fabric.mod.json is not valid JSON: ${firstLine(error)}`, { cause: error });
  }
  const fields = record(parsed);
  if (!fields) throw new JarProblem("its fabric.mod.json is not an object");
  const minecraft = record(fields.depends)?.minecraft;
  return bounded({
    loader: "fabric",
    name: stringOf(fields.name) || stringOf(fields.id),
    version: stringOf(fields.version),
    authors: listOf(fields.authors).map((author) => stringOf(author) || stringOf(record(author)?.name)),
    description: stringOf(fields.description),
    // A list means any of them (Fabric's own reading).
    apiVersion: listOf(minecraft).map(stringOf).filter(Boolean).join(" || "),
  });
}

const record = (value: Json): Record<string, Json> | undefined =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, Json>) : undefined;
const stringOf = (value: Json): string => (typeof value === "string" ? value : typeof value === "number" || typeof value === "boolean" ? String(value) : "");
const listOf = (value: Json): Json[] => (Array.isArray(value) ? value : value === undefined ? [] : [value]);
const firstLine = (error: unknown) => (error instanceof Error ? error.message : String(error)).split("\n")[0];

/** The contract's bounds on Plugin (resources.proto): the name one line, each field cut between characters. */
function bounded(description: JarDescription): JarDescription {
  const authors = [...new Set(description.authors.map((author) => cut(author.trim(), 256)).filter(Boolean))].slice(0, 50);
  return {
    loader: description.loader,
    name: cut(visibleLine(description.name.trim()), 256),
    version: cut(description.version.trim(), 256),
    authors,
    description: cut(description.description.trim(), 2048),
    apiVersion: cut(description.apiVersion.trim(), 256),
  };
}

/** `text` well-formed and at most `max` characters (code points, as protovalidate counts), cut with "…". */
export function cut(text: string, max: number): string {
  const characters = Array.from(text.toWellFormed());
  return characters.length <= max ? characters.join("") : characters.slice(0, max - 1).join("") + "…";
}

/**
 * yauzl's reader over an opened FileHandle: random reads through a 64 KiB window (the central
 * directory is read entry by entry, two small reads each), and ranges as streams for the
 * descriptor. It never closes the handle: its owner does, once yauzl is done.
 */
class HandleReader extends RandomAccessReader {
  readonly #handle: FileHandle;
  #window = Buffer.alloc(0);
  #windowStart = 0;

  constructor(handle: FileHandle) {
    super();
    this.#handle = handle;
  }

  override read(buffer: Buffer, offset: number, length: number, position: number, callback: (err: Error | null) => void): void {
    this.#readAt(buffer, offset, length, position).then(
      () => callback(null),
      (error: Error) => callback(error),
    );
  }

  async #readAt(buffer: Buffer, offset: number, length: number, position: number): Promise<void> {
    const windowSize = 64 * 1024;
    const within = () => position >= this.#windowStart && position + length <= this.#windowStart + this.#window.length;
    if (length > windowSize) return readFully(this.#handle, buffer, offset, length, position);
    if (!within()) {
      const window = Buffer.alloc(windowSize);
      const { bytesRead } = await this.#handle.read(window, 0, windowSize, position);
      [this.#window, this.#windowStart] = [window.subarray(0, bytesRead), position];
      if (!within()) throw new Error("unexpected end of the file");
    }
    this.#window.copy(buffer, offset, position - this.#windowStart, position - this.#windowStart + length);
  }

  override _readStreamForRange(start: number, end: number): Readable {
    const handle = this.#handle;
    return Readable.from(
      (async function* () {
        for (let at = start; at < end;) {
          const chunk = Buffer.alloc(Math.min(64 * 1024, end - at));
          await readFully(handle, chunk, 0, chunk.length, at);
          at += chunk.length;
          yield chunk;
        }
      })(),
      { objectMode: false },
    );
  }
}

/** Reads exactly `length` bytes at `position`, or fails at the end of the file. */
async function readFully(handle: FileHandle, buffer: Buffer, offset: number, length: number, position: number): Promise<void> {
  for (let done = 0; done < length;) {
    const { bytesRead } = await handle.read(buffer, offset + done, length - done, position + done);
    if (bytesRead === 0) throw new Error("unexpected end of the file");
    done += bytesRead;
  }
}
