/**
 * The Outpost agent inside a flying-squid server (a Minecraft server in JavaScript): a plugin that
 * keeps the agent's stream to Outpost while the server runs, makes `/outpost` a real command
 * (`/outpost login <CODE>`, `/outpost confirm`, `/outpost cancel`) whose reply the player sees in
 * chat, reports the players online and how the server is doing (flying-squid-stats.ts), lets
 * Outpost run console commands and follow the console, and, given a `files.root`, serves the
 * server's directory to the files panel.
 *
 * flying-squid is no dependency of Outpost: the plugin uses only the server object it is given,
 * described below by the few members it touches. Two ways to add it:
 *
 *   serv.addPlugin("outpost", outpostPlugin({ url, key }))        // after createMCServer
 *   createMCServer({ …, plugins: { "<outpost>/agent/flying-squid.ts": { url, key } } })
 */
import { commandForms, commandName } from "../contract/login-command.ts";
import { visibleLine } from "../contract/one-line.ts";
import { readFileSync } from "node:fs";
import { Code, type ConnectError } from "@connectrpc/connect";
import { Game } from "../gen/outpost/servers/v1/resources_pb.js";
import {
  PlayerAuth,
  commandProblem,
  maxPlayers,
  playerProblem,
  startAgent,
  type Agent,
  type AgentEvent,
  type AgentFilesOptions,
  type AgentOptions,
  type Player,
} from "./client.ts";
import { watchSquidConsole, type SquidConsoleServer } from "./flying-squid-console.ts";
import { describeFileError } from "./files/requests.ts";
import { sampleSquid, type SquidTicks } from "./flying-squid-stats.ts";

/** A player as flying-squid has them; `username` and `uuid` are set once they have logged in. */
export interface SquidPlayer {
  username: string;
  uuid: string;
  chat(message: string | { text: string }): void;
  once(event: "connected" | "disconnected", listener: () => void): unknown;
}

interface SquidCommand {
  base: string;
  info: string;
  usage: string;
  onlyPlayer?: boolean;
  action(params: string, ctx: { player?: SquidPlayer }): Promise<unknown>;
}

/** What the plugin uses of a flying-squid server (its MCServer). */
export interface SquidServer extends SquidConsoleServer, Omit<SquidTicks, "on"> {
  warn(message: string): void;
  commands: SquidConsoleServer["commands"] & { add(command: SquidCommand): unknown };
  players?: SquidPlayer[];
  on(event: "newPlayer", listener: (player: SquidPlayer) => void): unknown;
  on(event: "close", listener: () => void): unknown;
  on(event: "tick", listener: () => void): unknown;
}

/** flying-squid's settings (createMCServer's options), of which the plugin reads one. */
export interface SquidSettings {
  "online-mode"?: boolean;
}

export interface OutpostPluginOptions {
  /** Outpost's ACCOUNT_BASE_URL, e.g. https://outpost.example.com. */
  url: string;
  /** The server's agent key (opa_…). */
  key: string;
  /**
   * How the server authenticates its players. By default ONLINE in online mode and OFFLINE
   * otherwise; say PROXY for an offline-mode server behind a proxy that authenticates players
   * and forwards their identity with a secret.
   */
  playerAuth?: PlayerAuth;
  /** Let Outpost run console commands and follow the console (default true). */
  console?: boolean;
  /**
   * Serve the server's directory to Outpost's files panel: `root` (the directory; nothing outside it
   * is reached), `mode` ("on", the default, "read-only" or "off") and `deny` (globs relative to the
   * root that Outpost never sees or changes). Default: no files. flying-squid is a library inside
   * someone's program, whose working directory need not be the server's, so the operator names it.
   */
  files?: AgentFilesOptions;
  /** How often the server is sampled for Outpost's charts (default 10 s). */
  statsEveryMs?: number;
  /** Any other agent option (a transport, the backoff); `url`, `key` and the rest above win. */
  agent?: Partial<AgentOptions>;
}

/** flying-squid's plugin shape: `server` runs once for the server. */
export interface SquidPlugin {
  server(serv: SquidServer, settings: SquidSettings): void;
}

const packageVersion = (JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }).version;

/** The plugin for `serv.addPlugin("outpost", outpostPlugin(options))`. */
export function outpostPlugin(options: OutpostPluginOptions): SquidPlugin {
  return { server: (serv, settings) => attachOutpost(serv, settings, options) };
}

/**
 * The `plugins` setting's form: flying-squid loads this module by its path and calls `server`
 * with the plugin's settings as `this.settings`: `{ url, key, playerAuth?: "online" | "proxy" |
 * "offline" | "insecure", console?: boolean, files?: { root, mode?, deny? } }`; the key may come
 * from OUTPOST_AGENT_KEY instead.
 */
export function server(this: { settings?: Record<string, unknown> }, serv: SquidServer, settings: SquidSettings): void {
  attachOutpost(serv, settings, optionsFromSettings(this.settings ?? {}));
}

const playerAuthNames: Record<string, PlayerAuth> = { online: PlayerAuth.ONLINE, proxy: PlayerAuth.PROXY, offline: PlayerAuth.OFFLINE, insecure: PlayerAuth.INSECURE };

export function optionsFromSettings(settings: Record<string, unknown>): OutpostPluginOptions {
  const { url, key = process.env.OUTPOST_AGENT_KEY, playerAuth, console: withConsole, files } = settings;
  if (typeof url !== "string" || !/^https?:\/\//.test(url)) throw new Error(`the Outpost plugin needs "url", Outpost's http(s) address (got ${JSON.stringify(url)})`);
  if (typeof key !== "string" || !key) throw new Error('the Outpost plugin needs "key", the server\'s agent key (or OUTPOST_AGENT_KEY)');
  if (playerAuth !== undefined && !(typeof playerAuth === "string" && playerAuth in playerAuthNames)) {
    throw new Error(`the Outpost plugin's "playerAuth" is one of ${Object.keys(playerAuthNames).join(", ")} (got ${JSON.stringify(playerAuth)})`);
  }
  return {
    url,
    key,
    playerAuth: playerAuth === undefined ? undefined : playerAuthNames[playerAuth as string],
    console: withConsole !== false,
    files: files === undefined ? undefined : filesFromSettings(files),
  };
}

const filesModes = ["on", "read-only", "off"];

/** The `files` setting, checked as the command line's flags are: a mistake stops the server at start, not a request later. */
function filesFromSettings(files: unknown): AgentFilesOptions {
  const { root, mode, deny } = (typeof files === "object" && files !== null ? files : {}) as Record<string, unknown>;
  if (typeof root !== "string" || !root) throw new Error(`the Outpost plugin's "files" needs "root", the server's directory (got ${JSON.stringify(files)})`);
  if (mode !== undefined && !filesModes.includes(mode as string)) {
    throw new Error(`the Outpost plugin's "files.mode" is one of ${filesModes.join(", ")} (got ${JSON.stringify(mode)})`);
  }
  if (deny !== undefined && !(Array.isArray(deny) && deny.every((glob) => typeof glob === "string"))) {
    throw new Error(`the Outpost plugin's "files.deny" is a list of globs (got ${JSON.stringify(deny)})`);
  }
  return { root, mode: mode as AgentFilesOptions["mode"], deny: deny as string[] | undefined };
}

/** ONLINE when flying-squid authenticates players with Mojang (its default), else OFFLINE. */
export function defaultPlayerAuth(settings: SquidSettings): PlayerAuth {
  return settings["online-mode"] === false ? PlayerAuth.OFFLINE : PlayerAuth.ONLINE;
}

/** The connection as the `/outpost` command needs to know it. */
type Link = { state: "connecting" | "connected" | "disconnected" | "refused" };

function attachOutpost(serv: SquidServer, settings: SquidSettings, options: OutpostPluginOptions): void {
  const link: Link = { state: "connecting" };
  let forward = (_line: string) => {};
  const squidConsole = options.console === false ? undefined : watchSquidConsole(serv, (line) => forward(line));
  const agent = startAgent(
    {
      ...options.agent,
      url: options.url,
      key: options.key,
      game: Game.MINECRAFT,
      playerAuth: options.playerAuth ?? defaultPlayerAuth(settings),
      agentVersion: options.agent?.agentVersion ?? `${packageVersion} flying-squid`,
      console: squidConsole?.run,
      files: options.files ?? options.agent?.files,
    },
    (event) => logEvent(serv, options.url, link, event),
  );
  forward = (line) => agent.consoleOutput([line]);
  serv.commands.add({
    base: commandName,
    info: "sign in to an app with your Minecraft account through Outpost",
    usage: commandForms,
    onlyPlayer: true,
    action: (params, ctx) => playOutpostCommand(serv, agent, link, ctx.player!, params),
  });
  reportPlayers(serv, agent);
  const files = options.files ?? options.agent?.files;
  const sampler = sampleSquid(serv, {
    everyMs: options.statsEveryMs ?? 10_000,
    root: files && files.mode !== "off" ? files.root : undefined,
    report: (s) => agent.reportStats(s),
  });
  serv.on("close", () => {
    sampler.stop();
    squidConsole?.close();
    void agent.stop();
  });
}

function logEvent(serv: SquidServer, url: string, link: Link, event: AgentEvent): void {
  if (event.kind === "connected") {
    link.state = "connected";
    const { serverName, organizationSlug } = event.welcome;
    serv.info(`[Outpost] connected to ${url}: server "${visibleLine(serverName)}" of ${visibleLine(organizationSlug)}`);
  } else if (event.kind === "disconnected") {
    link.state = "disconnected";
    serv.warn(`[Outpost] disconnected (${visibleLine(event.error.rawMessage)}); reconnecting in ${(event.retryInMs / 1000).toFixed(1)} s`);
  } else if (event.kind === "fileError") {
    serv.warn(`[Outpost] ${visibleLine(describeFileError(event.error, event.operation))}`);
  } else if (event.error) {
    link.state = "refused";
    serv.err(`[Outpost] ${describeRefusal(event.error, url)}; players cannot sign in here until the server restarts with a working key`);
  }
}

function describeRefusal(error: ConnectError, url: string): string {
  const why = visibleLine(error.rawMessage);
  if (error.code === Code.Unavailable || error.code === Code.DeadlineExceeded) return `cannot reach Outpost at ${url}: ${why}`;
  return `Outpost refused the agent: ${why}`;
}

/**
 * `/outpost <params>` as the player typed it: Outpost's reply in their chat, or why it could not
 * be asked. Waits a little for a connection still being made; a lost one answers at once.
 */
async function playOutpostCommand(serv: SquidServer, agent: Agent, link: Link, player: SquidPlayer, params: string): Promise<void> {
  const who: Player = { name: player.username, uuid: player.uuid };
  const text = `/${commandName} ${params}`.trim();
  // A player who left meanwhile cannot be told; flying-squid would crash on the throw.
  const tell = (message: string) => {
    try {
      player.chat({ text: message });
    } catch (error) {
      serv.warn(`[Outpost] could not tell ${who.name}: ${visibleLine((error as Error).message)}`);
    }
  };
  if (commandProblem(who, text)) return tell(`Usage: ${commandForms}`);
  if (link.state === "refused") return tell("Signing in through Outpost is not available on this server right now.");
  if (link.state === "disconnected") return tell("Outpost cannot be reached right now. Try again in a minute.");
  try {
    const reply = await agent.playCommand(who, text, link.state === "connected" ? 15_000 : 5_000);
    tell(reply.message);
  } catch (error) {
    serv.warn(`[Outpost] ${who.name}'s ${visibleLine(text.split(" ").slice(0, 2).join(" "))} got no answer: ${visibleLine((error as Error).message)}`);
    tell("Outpost cannot be reached right now. Try again in a minute.");
  }
}

/**
 * Reports the players online to Outpost when one has logged in or left. Each session counts by
 * itself: in offline mode two sessions can share a UUID, and one leaving must not take the other
 * off the list. Outpost hears of each account once, by the name of its latest session.
 */
function reportPlayers(serv: SquidServer, agent: Agent): void {
  const online = new Map<SquidPlayer, Player>();
  const report = () => {
    const accounts = new Map<string, Player>();
    for (const who of online.values()) accounts.set(who.uuid, who);
    agent.setPlayers([...accounts.values()].slice(0, maxPlayers));
  };
  const join = (player: SquidPlayer) => {
    const who = { name: player.username, uuid: player.uuid };
    const problem = playerProblem(who);
    if (problem) return serv.warn(`[Outpost] not reporting a player: ${problem}`);
    online.set(player, who);
    report();
  };
  const leave = (player: SquidPlayer) => {
    if (online.delete(player)) report();
  };
  // Players already in when the plugin was added, then each new one once logged in.
  for (const player of serv.players ?? []) {
    join(player);
    player.once("disconnected", () => leave(player));
  }
  serv.on("newPlayer", (player) => {
    player.once("connected", () => join(player));
    player.once("disconnected", () => leave(player));
  });
}
