/**
 * The plugins panel on the game server's side: the jars in `plugins/` and `mods/` (enabled
 * `X.jar`, disabled `X.jar.disabled`) as they describe themselves, and switching one on or off by
 * renaming it. Everything goes through the sandbox as the other file operations do: what the deny
 * list hides is not listed, nothing outside the server's directory is opened, and renaming is a
 * write (refused when files are read-only). A jar that cannot be read is listed with its problem;
 * it never fails the whole list.
 */
import { readdir, rename } from "node:fs/promises";
import { join } from "node:path";
import { isJarName, pluginFolders, pluginJar } from "../../contract/plugin-jar.ts";
import { parseClientPath } from "./client-path.ts";
import { FileError, asFileError, errnoCode } from "./file-error.ts";
import { JarProblem, cut, readJarDescription, type DescriptorName, type JarDescription } from "./jar-description.ts";
import { addressable } from "./list-directory.ts";
import type { FileSandbox, Location } from "./sandbox.ts";
import { openRegularFile } from "./write-file.ts";

/** A plugin or mod as `servers/listPlugins` shows it. */
export interface PluginInfo extends JarDescription {
  /** Its jar: "plugins/EssentialsX.jar", "mods/lithium.jar.disabled". */
  path: string;
  size: number;
  enabled: boolean;
  modifiedAt: Date;
  /** Why its description could not be read, when it could not (the rest is then what its file name says). */
  problem?: string;
}

/** The most jars listed (the contract's bound): the first by path. */
export const maxPlugins = 1000;
/** Jars read at once: each holds a descriptor open. */
const concurrentReads = 8;

/** Which descriptor describes a jar when it holds several: a loader's own first. */
const preferences: Record<(typeof pluginFolders)[number], readonly DescriptorName[]> = {
  plugins: ["paper-plugin.yml", "plugin.yml", "fabric.mod.json"],
  mods: ["fabric.mod.json", "paper-plugin.yml", "plugin.yml"],
};

/** The jars of `plugins/` and `mods/`, described, sorted by path; a folder that is not there has none. */
export async function listPlugins(sandbox: FileSandbox): Promise<PluginInfo[]> {
  const paths: string[] = [];
  for (const folder of pluginFolders) paths.push(...(await jarsIn(sandbox, folder)));
  paths.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const described = new Array<PluginInfo | undefined>(Math.min(paths.length, maxPlugins));
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < described.length; i = next++) described[i] = await describePlugin(sandbox, paths[i]);
  };
  await Promise.all(Array.from({ length: concurrentReads }, worker));
  return described.filter((plugin) => plugin !== undefined);
}

/** The jar names directly in `folder` that a client could address and the deny list leaves visible, as paths. */
async function jarsIn(sandbox: FileSandbox, folder: string): Promise<string[]> {
  const location = await sandbox.locate(folder, "read").catch((error: unknown) => {
    if (error instanceof FileError && error.reason === "not_found") return undefined;
    throw error;
  });
  if (!location?.stats?.isDirectory()) return [];
  const directory = await sandbox.openDirectory(location.absolute, location.path);
  let names: string[];
  try {
    names = await readdir(directory.anchor).catch((error) => asFileError(error, location.path));
  } finally {
    await directory.handle.close();
  }
  const visible = (name: string) => !sandbox.isHidden(`${location.path}/${name}`) && !sandbox.isHidden(`${location.real}/${name}`);
  return names.filter((name) => isJarName(name) && addressable(name) && visible(name)).map((name) => `${location.path}/${name}`);
}

/**
 * The jar at `path` as its descriptor says, or with the problem that kept it from being read.
 * Undefined when nothing is there any more, or a folder is (a folder named like a jar is no plugin).
 */
async function describePlugin(sandbox: FileSandbox, path: string): Promise<PluginInfo | undefined> {
  const jar = pluginJar(path);
  if (!jar) return undefined;
  const plugin: PluginInfo = {
    path,
    loader: "",
    name: cut(jar.stem, 256),
    version: "",
    authors: [],
    description: "",
    apiVersion: "",
    size: 0,
    enabled: jar.enabled,
    modifiedAt: new Date(0),
  };
  try {
    const location = await sandbox.locate(path, "read");
    if (!location.stats || location.stats.isDirectory()) return undefined;
    [plugin.size, plugin.modifiedAt] = [location.stats.size, location.stats.mtime];
    const { handle, stats } = await openRegularFile(sandbox, location);
    try {
      [plugin.size, plugin.modifiedAt] = [stats.size, stats.mtime];
      const description = await readJarDescription(handle, stats.size, preferences[jar.folder]);
      return { ...plugin, ...description, name: description.name || plugin.name };
    } finally {
      await handle.close();
    }
  } catch (error) {
    // Gone since the folder was read (or hidden, which reads the same): not listed.
    if (error instanceof FileError && error.reason === "not_found") return undefined;
    return { ...plugin, problem: problemOf(error) };
  }
}

/**
 * Why a jar could not be read, for its owner: a refusal's message and the jar's own problems as
 * they are (they name the client's path or the jar's entries); a system error by its code only,
 * since its message names the real path on the machine.
 */
function problemOf(error: unknown): string {
  if (error instanceof FileError) return cut(error.message, 1024);
  const code = errnoCode(error);
  if (error instanceof Error && "syscall" in error) return `the jar could not be read on the server's machine${code ? ` (${code})` : ""}`;
  const why = error instanceof Error ? error.message.split("\n")[0] : String(error);
  return cut(error instanceof JarProblem ? why : `it is not a jar the agent can read: ${why}`, 1024);
}

/**
 * Enables or disables the jar at `path` (as listPlugins gave it) by renaming `X.jar` ↔
 * `X.jar.disabled` in its folder, and answers it as it is now. Already so: nothing is renamed.
 * Refuses a path that is no jar in plugins/ or mods/ (`invalid_path`), and a rename onto a name
 * already taken (`already_exists`): the two files are the owner's to sort out.
 */
export async function setPluginEnabled(sandbox: FileSandbox, path: string, enabled: boolean): Promise<PluginInfo> {
  const from = parseClientPath(path).relative;
  const jar = pluginJar(from);
  if (!jar) throw new FileError("invalid_path", `${JSON.stringify(from)} is not a jar in plugins/ or mods/ (X.jar or X.jar.disabled)`);
  const to = enabled ? jar.enabledPath : jar.disabledPath;
  const source = await sandbox.locate(from, "write");
  if (!source.stats && !source.link) throw new FileError("not_found", `${JSON.stringify(from)} does not exist`);
  if (source.stats?.isDirectory()) throw new FileError("not_a_regular_file", `${JSON.stringify(from)} is a folder, not a jar`);
  if (to !== from) await renameJar(sandbox, source, to);
  const plugin = await describePlugin(sandbox, to);
  if (!plugin) throw new FileError("not_found", `${JSON.stringify(to)} is gone`);
  return plugin;
}

/** Renames the jar at `source` to `to` in the same folder, unless something is at `to` already. */
async function renameJar(sandbox: FileSandbox, source: Location, to: string): Promise<void> {
  const target = await sandbox.locate(to, "write");
  if (target.stats || target.link) throw new FileError("already_exists", `${JSON.stringify(target.path)} already exists; move one of the two jars away first`);
  const directory = await sandbox.openDirectory(source.parent, source.path);
  try {
    // The entry is renamed, not what a symlink leads to.
    await rename(join(directory.anchor, source.name), join(directory.anchor, target.name)).catch((error) => asFileError(error, source.path));
  } finally {
    await directory.handle.close();
  }
}
