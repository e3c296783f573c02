/**
 * A Minecraft server in JavaScript (flying-squid) with Outpost's agent plugin: players sign in to
 * apps with `/outpost login <CODE>` in game, and Outpost sees who is online and can use the
 * console. The world lives in memory only. This terminal is the server's console.
 *
 *   OUTPOST_URL=http://localhost:3000 OUTPOST_AGENT_KEY=opa_… node examples/flying-squid-server/server.ts
 *
 * MC_PORT (25565), MC_HOST (all addresses), MC_VERSION (1.21.4) and MC_ONLINE_MODE (true; false
 * lets anyone join under any name, which Outpost accepts only where the deployment allows
 * insecure game servers). OUTPOST_PLAYER_AUTH overrides what the plugin tells Outpost about player
 * authentication (online, proxy, offline, insecure): "proxy" for an offline-mode server behind a
 * proxy that authenticates players and forwards them with a secret.
 */
import { createRequire } from "node:module";
import { optionsFromSettings, outpostPlugin, type SquidServer } from "../../agent/flying-squid.ts";

const require = createRequire(import.meta.url);
// flying-squid has no types of its own; the plugin describes what it uses of the server.
const flyingSquid = require("flying-squid") as { createMCServer(settings: object): SquidServer & { addPlugin(name: string, plugin: object): void } };
const defaults = require("flying-squid/config/default-settings.json") as object;

// The same checks as the plugin's `plugins` setting: a URL, a key, a known player-auth name.
const options = optionsFromSettings({
  url: process.env.OUTPOST_URL ?? "http://localhost:3000",
  key: process.env.OUTPOST_AGENT_KEY,
  playerAuth: process.env.OUTPOST_PLAYER_AUTH,
});
const onlineMode = (process.env.MC_ONLINE_MODE ?? "true") !== "false";

const serv = flyingSquid.createMCServer({
  ...defaults,
  port: Number(process.env.MC_PORT ?? 25565),
  host: process.env.MC_HOST,
  version: process.env.MC_VERSION ?? "1.21.4",
  "online-mode": onlineMode,
  motd: "flying-squid with Outpost sign-in",
  // No log files, no world folder: nothing is written to disk.
  logging: false,
  worldFolder: undefined,
});
// OUTPOST_STATS_SECONDS: how often the plugin samples the server for Outpost's charts (10).
const statsSeconds = Number(process.env.OUTPOST_STATS_SECONDS ?? 10);
serv.addPlugin("outpost", outpostPlugin({ ...options, statsEveryMs: statsSeconds * 1000 }));

// flying-squid's console puts the terminal in raw mode, where Ctrl-C is a keystroke that only
// closes the console. Make it the signal it usually is, for this process and whatever started it
// (npm, the demo), as the terminal itself would.
if (process.stdin.isTTY) process.stdin.on("data", (data) => String(data).includes("\u0003") && process.kill(0, "SIGINT"));
