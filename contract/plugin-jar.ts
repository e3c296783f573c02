/**
 * Where a server's plugins and mods are, and how one is switched off: a jar directly in `plugins/`
 * or `mods/`, enabled as `X.jar` and disabled as `X.jar.disabled` (the convention server owners
 * already use, which no loader reads). Core checks a caller's access to both names of a jar and
 * the agent renames one into the other, so both read the names from here.
 */

/** The folders whose jars the plugins panel lists, each directly under the server's directory. */
export const pluginFolders = ["plugins", "mods"] as const;

/** What a disabled jar's name ends with, after its `.jar`. */
export const disabledSuffix = ".disabled";

/** A plugin's jar by its two names. */
export interface PluginJar {
  /** "plugins" or "mods". */
  folder: (typeof pluginFolders)[number];
  /** Its file name without `.jar` or `.jar.disabled`. */
  stem: string;
  /** The path it has enabled (`plugins/X.jar`) and disabled (`plugins/X.jar.disabled`). */
  enabledPath: string;
  disabledPath: string;
  /** Whether the path asked about is the enabled name. */
  enabled: boolean;
}

/** Whether a file name is a jar's, enabled or disabled (with something before the `.jar`). */
export function isJarName(name: string): boolean {
  return jarStem(name) !== undefined;
}

function jarStem(name: string): string | undefined {
  const base = name.endsWith(".jar" + disabledSuffix) ? name.slice(0, -disabledSuffix.length) : name;
  return base.endsWith(".jar") && base.length > ".jar".length ? base.slice(0, -".jar".length) : undefined;
}

/**
 * The jar that `path` names (a normalized client path: `plugins/X.jar`, `mods/Y.jar.disabled`),
 * or undefined for anything else: another folder, a folder below one of them, another extension.
 */
export function pluginJar(path: string): PluginJar | undefined {
  const segments = path.split("/");
  if (segments.length !== 2) return undefined;
  const [folder, name] = segments;
  const known = pluginFolders.find((f) => f === folder);
  const stem = jarStem(name);
  if (!known || stem === undefined) return undefined;
  const enabledPath = `${known}/${stem}.jar`;
  return { folder: known, stem, enabledPath, disabledPath: enabledPath + disabledSuffix, enabled: path === enabledPath };
}
