/**
 * npm run demo — a newcomer's first five minutes with Game OAuth, on one machine:
 * Outpost (embedded database in a temporary DATA_DIR, or in DEMO_DATA_DIR, which must be new or
 * empty: the demo seeds it from scratch), an operator account and
 * API key, an organization, a server, a Game OAuth client for the example app, a simulated game
 * server (`outpost-agent run`, whose console is this terminal) and the example app on :4000.
 * Ctrl-C stops everything (and removes the temporary data). DEMO_PORT, DEMO_GAME_PORT and
 * DEMO_APP_PORT change the ports (3000, 3001, 4000); each is checked before anything starts
 * (scripts/demo-ports.ts). When something fails the temporary data is kept, with Outpost's log,
 * where the message says.
 *
 * `npm run demo -- --minecraft`: instead of the simulated game server, a real one to join with a
 * Minecraft 1.21.4 client: flying-squid in offline mode on localhost:25565 (DEMO_MINECRAFT_PORT)
 * with Outpost's agent plugin (examples/flying-squid-server), this terminal its console. Offline
 * mode lets anyone join under any name, so this Outpost allows insecure game servers.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, openSync, rmSync, writeSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { serveNodeOptions } from "../server/node-options.ts";
import { portInUseIn, portTakenMessage, takenPortMessages, type DemoPort } from "./demo-ports.ts";

const root = fileURLToPath(new URL("..", import.meta.url));
const port = Number(process.env.DEMO_PORT ?? 3000);
const gamePort = Number(process.env.DEMO_GAME_PORT ?? 3001);
const appPort = Number(process.env.DEMO_APP_PORT ?? 4000);
const minecraft = process.argv.slice(2).includes("--minecraft");
const minecraftPort = Number(process.env.DEMO_MINECRAFT_PORT ?? 25565);
if (minecraft && !installed("flying-squid")) {
  console.error("demo: --minecraft needs flying-squid, one of Outpost's dev dependencies: run npm install");
  process.exit(2);
}

function installed(name: string): boolean {
  try {
    createRequire(import.meta.url).resolve(name);
    return true;
  } catch {
    return false;
  }
}
const baseUrl = `http://localhost:${port}`;
const issuer = `http://localhost:${gamePort}`;
const appUrl = `http://localhost:${appPort}`;
const host = "127.0.0.1";

// Before anything starts: a port already taken is named, with what holds it.
const ports: DemoPort[] = [
  { port, variable: "DEMO_PORT", purpose: "Outpost's dashboard and API" },
  { port: gamePort, variable: "DEMO_GAME_PORT", purpose: "Outpost's Game OAuth issuer" },
  { port: appPort, variable: "DEMO_APP_PORT", purpose: "the example app" },
  ...(minecraft ? [{ port: minecraftPort, variable: "DEMO_MINECRAFT_PORT", purpose: "the Minecraft server" }] : []),
];
const taken = await takenPortMessages(ports, host);
if (taken.length) {
  for (const message of taken) console.error(`demo: ${message}`);
  process.exit(1);
}

const temporary = !process.env.DEMO_DATA_DIR;
const dataDir = process.env.DEMO_DATA_DIR ?? mkdtempSync(join(tmpdir(), "outpost-demo-"));
mkdirSync(dataDir, { recursive: true });

const children: ChildProcess[] = [];
const outpostEnv = {
  ...process.env,
  DATA_DIR: dataDir,
  PORT: String(port),
  GAME_PORT: String(gamePort),
  HOST: host,
  ACCOUNT_BASE_URL: baseUrl,
  GAME_ISSUER_URL: issuer,
  LOG_LEVEL: "info",
  ...(minecraft ? { ALLOW_INSECURE_GAME_SERVERS: "true" } : {}),
};
delete (outpostEnv as Record<string, string | undefined>).DATABASE_URL;

// The one stop in progress: a second call (Ctrl-C and a child's exit at once) waits for it, so
// the process does not exit before the temporary data is removed. Only a stop asked for (code 0)
// removes it: after a failure it holds the log the message points to.
let stopping: Promise<never> | undefined;
function stopAll(code: number): Promise<never> {
  stopping ??= (async () => {
    for (const child of [...children].reverse()) {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((done) => child.once("close", done));
        child.kill("SIGTERM");
        await Promise.race([exited, new Promise((done) => setTimeout(done, 5000))]);
      }
    }
    if (temporary && code === 0) rmSync(dataDir, { recursive: true, force: true });
    else if (temporary) console.error(`demo: kept ${dataDir} (Outpost's data and log); delete it when done`);
    process.exit(code);
  })();
  return stopping;
}
process.on("SIGINT", () => void stopAll(0));
process.on("SIGTERM", () => void stopAll(0));

function fail(message: string): Promise<never> {
  console.error(`demo: ${message}`);
  return stopAll(1);
}

/** Runs a command to its end, `input` on its stdin; resolves with its stdout. */
function run(script: string, args: string[], input = ""): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(root, script), ...args], { env: outpostEnv, stdio: ["pipe", "pipe", "pipe"] });
    child.stdin.on("error", () => {}); // its exit says what went wrong
    child.stdin.end(input);
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    child.on("close", (code) => (code === 0 ? resolve(out) : reject(new Error(`${script} ${args[0]} failed: ${err || out}`))));
  });
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function api(key: string, path: string, body: unknown): Promise<any> {
  const res = await fetch(`${baseUrl}/api/http/${path}`, {
    method: "POST",
    headers: { "x-api-key": key, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const json = await res.json();
  if (!res.ok) throw new Error(`${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

const simulatorGuide = {
  server: `"Survival" (minecraft, online auth), its simulated console below`,
  steps: `1. Open ${appUrl} and click "Sign in with your game account".
2. Outpost's page shows a login code, e.g. ABCD-1234 (after a short browser check).
3. Type into this terminal — the game server's console — a player name, a UUID and the command:

   Steve 123e4567-e89b-12d3-a456-426614174000 /outpost login ABCD-1234

   The game asks Steve to confirm ("Sign in to Example app at localhost:${appPort}? …") and the page
   says he is confirming. Within 60 s, confirm as he would:

   Steve 123e4567-e89b-12d3-a456-426614174000 /outpost confirm

   The page then returns you to the app, which shows Steve, minecraft and his sub.`,
};

const minecraftGuide = {
  server: `"Survival": flying-squid on localhost:${minecraftPort} (Minecraft 1.21.4, offline mode), its console below`,
  steps: `1. Join localhost:${minecraftPort} with a Minecraft 1.21.4 client, under any name.
2. Open ${appUrl} and click "Sign in with your game account".
3. Outpost's page shows a login code, e.g. ABCD-1234 (after a short browser check). In game, type
   in chat:

   /outpost login ABCD-1234

   The game asks you to confirm ("Sign in to Example app at localhost:${appPort}? …") and the page
   says you are confirming. Within 60 s, type:

   /outpost confirm

   The page then returns you to the app, which shows your name, minecraft and your sub.`,
};
const guide = minecraft ? minecraftGuide : simulatorGuide;

/** `outpost-agent run`: a game server without a game, whose console is this terminal. */
function startSimulator(agentKey: string): ChildProcess {
  return spawn(process.execPath, [join(root, "bin/outpost-agent.js"), "run", "--url", baseUrl, "--key", agentKey, "--game", "minecraft", "--auth", "online"], {
    env: process.env,
    stdio: ["inherit", "inherit", "inherit"],
  });
}

/** flying-squid with the agent plugin, whose console is this terminal. */
function startMinecraftServer(agentKey: string): ChildProcess {
  return spawn(process.execPath, [join(root, "examples/flying-squid-server/server.ts")], {
    env: { ...process.env, OUTPOST_URL: baseUrl, OUTPOST_AGENT_KEY: agentKey, MC_PORT: String(minecraftPort), MC_HOST: "127.0.0.1", MC_ONLINE_MODE: "false" },
    stdio: ["inherit", "inherit", "inherit"],
  });
}

/**
 * `outpost serve`, its output written to `logFile` as it comes (synchronously: the demo may exit
 * right after). Resolves once it serves; a failure to start says why, naming a port in use.
 */
function startOutpost(logFile: string): Promise<ChildProcess> {
  const log = openSync(logFile, "a");
  const serve = spawn(process.execPath, [...serveNodeOptions, join(root, "bin/outpost.js"), "serve"], { env: outpostEnv, stdio: ["ignore", "pipe", "pipe"] });
  children.push(serve);
  let errors = "";
  serve.stderr!.on("data", (d: Buffer) => {
    writeSync(log, d);
    errors = (errors + d).slice(-8192);
  });
  return new Promise((resolve, reject) => {
    let seen: string | undefined = "";
    const timer = setTimeout(() => reject(new Error(`Outpost did not start within 60 s; its log: ${logFile}`)), 60_000);
    serve.stdout!.on("data", (d: Buffer) => {
      writeSync(log, d);
      if (seen === undefined) return;
      seen += d;
      if (seen.includes('"Outpost is serving"')) {
        clearTimeout(timer);
        seen = undefined;
        resolve(serve);
      }
    });
    serve.once("close", (code) => {
      clearTimeout(timer);
      reject(new Error(`Outpost exited (${code}): ${whyOutpostExited(errors)}; its log: ${logFile}`));
    });
  });
}

/** Outpost's own last words (`error: …`), a port in use named with the variable that moves it. */
function whyOutpostExited(stderr: string): string {
  const inUse = portInUseIn(stderr);
  if (inUse !== undefined) {
    const ours = ports.find((p) => p.port === inUse);
    return ours ? portTakenMessage(ours, "another program took it") : `port ${inUse} is in use (EADDRINUSE), as Outpost's configuration asks for it`;
  }
  const said = stderr
    .trim()
    .split("\n")
    .filter((line) => line.startsWith("error: "))
    .pop();
  return said ? said.slice("error: ".length) : "see its log";
}

try {
  // 1. Outpost; its JSON logs go to a file so that this terminal stays readable.
  const logFile = join(dataDir, "outpost.log");
  console.log(`Starting Outpost (embedded database in ${dataDir}) …`);
  const serve = await startOutpost(logFile);

  // 2. Seed: an operator and an API key (the CLI), then an organization, a server and a client (the HTTP API).
  const email = "operator@example.com";
  const password = "demo operator password";
  // The password on stdin, as the README shows it: not in a process list.
  await run("bin/outpost.js", ["user", "create", "--email", email, "--name", "Operator", "--platform-admin"], `${password}\n`);
  const key = (await run("bin/outpost.js", ["api-key", "create", "--email", email, "--name", "demo"])).trim().split("\n").pop()!;
  await api(key, "organizations/createOrganization", { name: "Demo Craft", slug: "demo" });
  const server = await api(key, "servers/createServer", { organizationSlug: "demo", name: "Survival", game: "minecraft" });
  const client = await api(key, "organizations/createGameOAuthClient", {
    organizationSlug: "demo",
    name: "Example app",
    redirectUris: [`${appUrl}/callback`],
    verifierPolicy: "any_server",
  });

  // 3. The example app.
  const app = spawn(process.execPath, [join(root, "examples/game-oauth-app/app.ts")], {
    env: {
      ...process.env,
      OUTPOST_ISSUER: issuer,
      CLIENT_ID: client.client.clientId,
      CLIENT_SECRET: client.clientSecret,
      PORT: String(appPort),
      REDIRECT_URI: `${appUrl}/callback`,
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  children.push(app);
  await new Promise<void>((resolve, reject) => {
    app.stdout!.on("data", (d: Buffer) => (String(d).includes("example app on") ? resolve() : process.stdout.write(d)));
    app.once("close", (code) => reject(new Error(`the example app exited (${code})`)));
  });

  console.log(`
Dashboard    ${baseUrl}/app  sign in as ${email}, password "${password}"
Outpost      ${baseUrl}  (HTTP API, API key ${key})
Game issuer  ${issuer}  (discovery: ${issuer}/.well-known/openid-configuration)
Client       ${client.client.clientId} "Example app" of organization "demo", redirect ${appUrl}/callback
Server       ${guide.server}
Logs         ${logFile}

${guide.steps}
Ctrl-C stops everything.
`);

  // 4. The game server, with this terminal as its console.
  const game = minecraft ? startMinecraftServer(server.agentKey) : startSimulator(server.agentKey);
  children.push(game);
  for (const child of children) {
    child.once("close", (code) => {
      const name = child === serve ? "Outpost" : child === app ? "the example app" : minecraft ? "the Minecraft server" : "the agent";
      if (!stopping) void fail(`${name} stopped (${code}); Outpost's log: ${logFile}`);
    });
  }
} catch (error) {
  await fail((error as Error).message);
}
