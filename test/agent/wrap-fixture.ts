/**
 * The wrap suites' setting: a real Outpost (restartable, a plan of 20 servers), an app's callback
 * and the organization "acme" with a Game OAuth client (seedGameOAuth), and `outpost-agent wrap`
 * around a stand-in game server that prints the lines Paper, Spigot and vanilla print. Players are
 * played through the operator's terminal (the agent's stdin), which the stand-in reads as its console.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";
import { startAgentProcess, type AgentProcess } from "../support/agent.ts";
import { freePort } from "../support/outpost.ts";
import { seedGameOAuth, startCallbackServer, type CallbackServer, type Seeded } from "../support/game-oauth.ts";
import { startRestartableOutpost, type RestartableOutpost } from "../support/restartable-outpost.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- JSON from the HTTP API, read field by field
export type Json = any;

const standIn = fileURLToPath(new URL("./fixtures/stand-in-server.ts", import.meta.url));

/**
 * Starts the setting in the calling suite's `before` and ends it in its `after`; the helpers use it.
 * With `dashboard`, Outpost's ACCOUNT_BASE_URL is where it listens, so that a browser can use its
 * dashboard (the owner signs in as owner@example.com with "a long password").
 */
export function useWrapSetting(options: { dashboard?: boolean } = {}) {
  let outpost: RestartableOutpost;
  let callback: CallbackServer;
  let seeded: Seeded;
  const running: AgentProcess[] = [];
  const dirs: string[] = [];

  before(async () => {
    callback = await startCallbackServer();
    const port = options.dashboard ? await freePort() : undefined;
    const dashboard: Record<string, string> = port ? { PORT: String(port), ACCOUNT_BASE_URL: `http://127.0.0.1:${port}` } : {};
    outpost = await startRestartableOutpost({ PLANS: '{"free":{"servers":20,"gameOAuthClients":2}}', ...dashboard });
    seeded = await seedGameOAuth(outpost.baseUrl, [callback.redirectUri], "owner@example.com", dashboard.ACCOUNT_BASE_URL);
  });
  after(async () => {
    await Promise.all(running.map((wrapped) => wrapped.stop("SIGKILL")));
    await outpost?.close();
    await callback?.close();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  const createServer = async (name: string): Promise<{ id: string; key: string }> => {
    const { server, agentKey } = await seeded.api("POST", "servers/createServer", { organizationSlug: "acme", name, game: "minecraft" });
    return { id: server.id, key: agentKey };
  };
  /** Polls the server until `check` holds. */
  const eventually = async (id: string, check: (server: Json) => boolean): Promise<Json> => {
    for (let i = 0; ; i++) {
      const { server } = await seeded.api("GET", `servers/getServer?serverId=${id}`);
      if (check(server)) return server;
      if (i > 150) assert.fail(`the server did not reach the state: ${JSON.stringify(server)}`);
      await sleep(100);
    }
  };
  /** `outpost-agent wrap` around the stand-in, in a directory of its own (no server.properties). */
  const wrap = (key: string, standInArgs: string[], options: { url?: string; extra?: string[]; cwd?: string } = {}) => {
    const cwd = options.cwd ?? mkdtempSync(join(tmpdir(), "outpost-wrap-"));
    dirs.push(cwd);
    const args = ["wrap", "--url", options.url ?? outpost.baseUrl, "--key", key, ...(options.extra ?? ["--auth", "online"])];
    const wrapped = startAgentProcess([...args, "--", process.execPath, standIn, ...standInArgs], {}, cwd);
    running.push(wrapped);
    return wrapped;
  };
  const connected = (wrapped: AgentProcess, since = 0) => wrapped.waitFor(/\[outpost\] connected to Outpost/, since);
  /** What the player reads in game next (after `since` in the output). */
  const told = async (wrapped: AgentProcess, name: string, since: number) => (await wrapped.waitFor(new RegExp(`tellraw ${name}: \\[Outpost\\] (.*)\\n`), since))[1];
  /** The player types `text` in game; resolves with what Outpost tells them. */
  const play = (wrapped: AgentProcess, name: string, text: string) => {
    const since = wrapped.output().length;
    wrapped.send(`player run ${name} ${text}`);
    return told(wrapped, name, since);
  };

  return { outpost: () => outpost, callback: () => callback, seeded: () => seeded, createServer, eventually, wrap, connected, told, play };
}
