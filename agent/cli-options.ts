/**
 * `outpost-agent`'s flags read into the agent's options, apart from cli.ts (which runs as soon as
 * it is imported) so that tests can read a command line without starting anything. A mistake is a
 * UsageError, which the CLI prints with its usage and exit code 2: it is found before the game
 * server starts, not at Outpost's first request.
 */
import { restartModes, type RestartMode } from "./restart-policy.ts";
import { readFileSync, statSync } from "node:fs";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { Game, PlayerAuth } from "../gen/outpost/servers/v1/resources_pb.js";
import type { AgentFilesOptions, AgentOptions } from "./options.ts";
import { checkDenyGlob, type FilesMode } from "./files/sandbox.ts";

export class UsageError extends Error {}

const games: Record<string, Game> = { minecraft: Game.MINECRAFT, hytale: Game.HYTALE };
const auths: Record<string, PlayerAuth> = { online: PlayerAuth.ONLINE, proxy: PlayerAuth.PROXY, offline: PlayerAuth.OFFLINE, insecure: PlayerAuth.INSECURE };
const filesModes: Record<string, FilesMode> = { on: "on", "read-only": "read-only", off: "off" };

const agentVersion = (JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }).version;

/** The flags of every command that connects. */
export const connectionOptions = {
  url: { type: "string" },
  key: { type: "string" },
  game: { type: "string", default: "minecraft" },
  auth: { type: "string", default: "online" },
} as const;

export function choice<T>(table: Record<string, T>, value: string, flag: string): T {
  if (!(value in table)) throw new UsageError(`${flag} must be one of ${Object.keys(table).join(", ")} (got "${value}")`);
  return table[value];
}

export function agentOptions(values: { url?: string; key?: string; game: string; auth: string }): AgentOptions {
  if (!values.url) throw new UsageError("--url is required");
  let url: URL;
  try {
    url = new URL(values.url);
  } catch {
    throw new UsageError(`--url must be an http or https URL (got "${values.url}")`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new UsageError(`--url must be an http or https URL (got "${values.url}")`);
  const key = values.key ?? process.env.OUTPOST_AGENT_KEY;
  if (!key) throw new UsageError("--key (or OUTPOST_AGENT_KEY) is required");
  return {
    url: url.origin,
    key,
    game: choice(games, values.game, "--game"),
    playerAuth: choice(auths, values.auth, "--auth"),
    agentVersion,
  };
}

/** parseArgs, its complaints as usage errors. */
export function parse<T>(parseArgsCall: () => T): T {
  try {
    return parseArgsCall();
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

/** `wrap`'s command line, read. */
export interface WrapArgs {
  /** The connection's flags; `auth` is undefined when not given (server.properties decides). */
  values: { url?: string; key?: string; game: string; auth?: string };
  /** The server command, after `--`. */
  command: string[];
  graceSeconds: number;
  /** `--restart` and `--restart-delay-seconds`: what to do when the server ends by itself. */
  restart: { mode: RestartMode; firstDelayMs: number };
  /** What of the server's directory the agent serves; undefined with `--files off`. */
  files?: AgentFilesOptions;
  /** `--stats-seconds`: how often the server's CPU, memory and players are sampled for Outpost. */
  statsEveryMs: number;
}

const wrapOptions = {
  ...connectionOptions,
  auth: { type: "string" },
  "grace-seconds": { type: "string", default: "30" },
  restart: { type: "string", default: "on-crash" },
  "restart-delay-seconds": { type: "string", default: "5" },
  root: { type: "string" },
  files: { type: "string", default: "on" },
  "files-deny": { type: "string", multiple: true },
  "stats-seconds": { type: "string", default: "10" },
} as const;

/** `wrap`'s flags before `--` and the server command after it; `cwd` is where the server will run. */
export function parseWrapArgs(args: string[], cwd: string): WrapArgs {
  const split = args.indexOf("--");
  const command = split < 0 ? [] : args.slice(split + 1);
  if (!command.length) throw new UsageError("the server command is required, after --: -- java -jar paper.jar nogui");
  const { values } = parse(() => parseArgs({ args: args.slice(0, split), options: wrapOptions, strict: true }));
  if (values.game !== "minecraft") throw new UsageError(`wrap reads Minecraft server consoles only (--game minecraft, got "${values.game}")`);
  const graceSeconds = Number(values["grace-seconds"]);
  if (!/^\d+$/.test(values["grace-seconds"]) || graceSeconds > 3600)
    throw new UsageError(`--grace-seconds must be a whole number of seconds up to 3600 (got "${values["grace-seconds"]}")`);
  const { url, key, game, auth } = values;
  const files = filesOptions(choice(filesModes, values.files, "--files"), values.root, values["files-deny"] ?? [], cwd);
  const mode = choice(Object.fromEntries(restartModes.map((m) => [m, m])) as Record<string, RestartMode>, values.restart, "--restart");
  const delay = Number(values["restart-delay-seconds"]);
  if (!/^\d+(\.\d+)?$/.test(values["restart-delay-seconds"]) || delay <= 0 || delay > 300)
    throw new UsageError(`--restart-delay-seconds must be a number of seconds above 0, up to 300 (got "${values["restart-delay-seconds"]}")`);
  const stats = Number(values["stats-seconds"]);
  if (!/^\d+(\.\d+)?$/.test(values["stats-seconds"]) || stats < 0.5 || stats > 3600)
    throw new UsageError(`--stats-seconds must be a number of seconds from 0.5 to 3600 (got "${values["stats-seconds"]}")`);
  return { values: { url, key, game, auth }, command, graceSeconds, restart: { mode, firstDelayMs: delay * 1000 }, files, statsEveryMs: stats * 1000 };
}

/**
 * `--files`, `--root` and `--files-deny` as the agent's files option. The root defaults to the
 * directory the server runs in, and is made absolute here: the operator's `--root world` means
 * the one beside the server, whatever happens to the agent's working directory later.
 */
function filesOptions(mode: FilesMode, root: string | undefined, deny: string[], cwd: string): AgentFilesOptions | undefined {
  if (mode === "off") return undefined;
  const absolute = resolve(cwd, root ?? ".");
  let stats;
  try {
    stats = statSync(absolute, { throwIfNoEntry: false });
  } catch (error) {
    throw new UsageError(`--root ${absolute} cannot be reached: ${(error as Error).message}`);
  }
  if (!stats) throw new UsageError(`--root ${absolute} does not exist`);
  if (!stats.isDirectory()) throw new UsageError(`--root ${absolute} is not a directory`);
  for (const glob of deny) {
    try {
      checkDenyGlob(glob);
    } catch (error) {
      throw new UsageError((error as Error).message);
    }
  }
  return { root: absolute, mode, deny };
}
