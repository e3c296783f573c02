/**
 * flying-squid with the Outpost plugin's console side alone (agent/flying-squid-console.ts), in a
 * process of its own (flying-squid takes over stdin and leaves timers behind). Runs the console
 * runs given as JSON in the first argument — each `{ command, abortAfterMs? }`, all at once —
 * with a line printed from outside any command meanwhile, then prints one line, "result: " and JSON: each run's
 * result and every line the console printed.
 */
import { createRequire } from "node:module";
import { watchSquidConsole, type SquidConsoleServer } from "../../agent/flying-squid-console.ts";

type Server = SquidConsoleServer & {
  waitForReady(timeoutMs: number): Promise<unknown>;
  commands: { add(command: object): unknown };
};
const require = createRequire(import.meta.url);
const { createMCServer } = require("flying-squid") as { createMCServer(settings: object): Server };
const defaults = require("flying-squid/config/default-settings.json") as object;

const runs = JSON.parse(process.argv[2]) as Array<{ command: string; abortAfterMs?: number }>;
const serv = createMCServer({
  ...defaults,
  port: 0,
  host: "127.0.0.1",
  "online-mode": false,
  logging: false,
  noConsoleOutput: true,
  worldFolder: undefined,
  generation: { name: "superflat", options: {} },
});
await serv.waitForReady(30_000);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
// Commands with the shapes the console must handle: output after an await, no end, a crash.
serv.commands.add({ base: "slow", info: "", usage: "/slow", action: async () => (await sleep(50), serv.info("slow done")) });
serv.commands.add({ base: "hang", info: "", usage: "/hang", action: () => (serv.info("started"), new Promise(() => {})) });
serv.commands.add({ base: "crash", info: "", usage: "/crash", action: () => Promise.reject(new Error("boom")) });

const live: string[] = [];
const squidConsole = watchSquidConsole(serv, (line) => live.push(line));
setTimeout(() => serv.info("a player did something"), 10);
const results = await Promise.all(
  runs.map(({ command, abortAfterMs }) => squidConsole.run(command, abortAfterMs ? AbortSignal.timeout(abortAfterMs) : new AbortController().signal)),
);
squidConsole.close();
serv.info("after close");
process.stdout.write(`\nresult: ${JSON.stringify({ results, live })}\n`);
process.exit(0);
