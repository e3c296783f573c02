/**
 * A real Minecraft server for the agent's end-to-end tests: examples/flying-squid-server (flying-squid
 * with Outpost's plugin) as a child process — flying-squid takes over stdin and exit hooks and
 * leaves timers behind, so it gets a process of its own — and mineflayer bots that join it.
 */
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { fileURLToPath } from "node:url";
import { createBot, type Bot } from "mineflayer";

const script = fileURLToPath(new URL("../../examples/flying-squid-server/server.ts", import.meta.url));

export const minecraftVersion = "1.21.4";

export interface SquidProcess {
  port: number;
  /** Everything it printed so far, colour escapes removed. */
  output(): string;
  /** Resolves with the match once its output after position `since` matches. */
  waitFor(pattern: RegExp, since?: number, timeoutMs?: number): Promise<RegExpExecArray>;
  /** Types a line at its console. */
  send(line: string): void;
  stop(): Promise<void>;
}

/** Starts the example server in offline mode on a free loopback port; resolves once it listens. */
export async function startSquid(env: Record<string, string>): Promise<SquidProcess> {
  const child = spawn(process.execPath, [script], {
    env: { ...process.env, MC_PORT: "0", MC_HOST: "127.0.0.1", MC_VERSION: minecraftVersion, MC_ONLINE_MODE: "false", ...env },
    stdio: ["pipe", "pipe", "pipe"],
  });
  let output = "";
  const waiters = new Set<() => void>();
  const exited = new Promise<void>((resolve) => child.once("close", () => resolve()));
  const onData = (chunk: Buffer) => {
    output += String(chunk).replace(/\x1b\[[0-9;]*[A-Za-z]/g, "");
    for (const check of waiters) check();
  };
  child.stdout.on("data", onData);
  child.stderr.on("data", onData);
  void exited.then(() => waiters.forEach((check) => check()));
  const waitFor = (pattern: RegExp, since = 0, timeoutMs = 30_000) =>
    new Promise<RegExpExecArray>((resolve, reject) => {
      const timer = setTimeout(() => done(new Error(`no ${pattern} from the Minecraft server within ${timeoutMs} ms:\n${output}`)), timeoutMs);
      const check = () => {
        const match = pattern.exec(output.slice(since));
        if (match) done(match);
        else if (child.exitCode !== null || child.signalCode !== null) done(new Error(`the Minecraft server exited:\n${output}`));
      };
      const done = (result: RegExpExecArray | Error) => {
        clearTimeout(timer);
        waiters.delete(check);
        if (result instanceof Error) reject(result);
        else resolve(result);
      };
      waiters.add(check);
      check();
    });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    await exited;
  };
  try {
    const port = Number((await waitFor(/Server listening on port (\d+)/))[1]);
    return { port, output: () => output, waitFor, send: (line) => child.stdin.write(`${line}\n`), stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** The UUID an offline-mode server gives a name: version 3, from MD5("OfflinePlayer:" + name). */
export function offlineUuid(name: string): string {
  const bytes = createHash("md5").update(`OfflinePlayer:${name}`).digest();
  bytes[6] = (bytes[6] & 0x0f) | 0x30;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = bytes.toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export interface TestBot {
  bot: Bot;
  /** The login's UUID, as the server sent it. */
  uuid: string;
  /** Every chat line it received, as plain text. */
  messages: string[];
  /** Resolves with the first message received (from position `since` on) that matches. */
  message(pattern: RegExp, since?: number, timeoutMs?: number): Promise<string>;
  quit(): Promise<void>;
}

/** An offline-mode player (mineflayer) that has joined and spawned. */
export async function joinBot(port: number, username: string): Promise<TestBot> {
  const bot = createBot({ host: "127.0.0.1", port, username, auth: "offline", version: minecraftVersion, hideErrors: true });
  const messages: string[] = [];
  const waiters = new Set<() => void>();
  bot.on("messagestr", (text) => {
    messages.push(text);
    for (const check of waiters) check();
  });
  const ended = new Promise<void>((resolve) => bot.once("end", () => resolve()));
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${username} did not spawn within 30 s`)), 30_000);
      bot.once("spawn", () => (clearTimeout(timer), resolve()));
      bot.once("kicked", (reason) => (clearTimeout(timer), reject(new Error(`${username} was kicked: ${reason}`))));
      bot.once("error", (error) => (clearTimeout(timer), reject(error)));
    });
  } catch (error) {
    bot.end();
    throw error;
  }
  return {
    bot,
    uuid: bot._client.uuid,
    messages,
    message(pattern, since = 0, timeoutMs = 20_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => done(new Error(`${username} saw no ${pattern} within ${timeoutMs} ms; chat: ${JSON.stringify(messages)}`)), timeoutMs);
        const check = () => {
          const hit = messages.slice(since).find((m) => pattern.test(m));
          if (hit !== undefined) done(hit);
        };
        const done = (result: string | Error) => {
          clearTimeout(timer);
          waiters.delete(check);
          if (result instanceof Error) reject(result);
          else resolve(result);
        };
        waiters.add(check);
        check();
      });
    },
    async quit() {
      bot.quit();
      await Promise.race([ended, new Promise((resolve) => setTimeout(resolve, 5_000))]);
    },
  };
}
