import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { createServer as createHttpServer } from "node:http";
import { createServer, type Server, type Socket } from "node:net";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";

const demo = fileURLToPath(new URL("../../scripts/demo.ts", import.meta.url));

/** A server holding a port on 127.0.0.1 (as `npm start` holds 3000), closed with its connections after the test. */
async function hold(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  server.on("connection", (socket: Socket) => connections.push(socket));
  held.push(server);
  return (server.address() as { port: number }).port;
}
const held: Server[] = [];
const connections: Socket[] = [];

/** A port nothing listens on now. */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** `npm run demo` as a newcomer runs it, with `env`; `until` (a line of its output) ends the wait early. */
function runDemo(env: Record<string, string>, until?: RegExp) {
  const child = spawn(process.execPath, [demo], { env: { ...process.env, ...env }, stdio: ["pipe", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
  const printed = new Promise<string>((resolve, reject) => {
    child.stdout.on("data", (d) => {
      stdout += d;
      if (until?.test(stdout)) resolve(stdout);
    });
    exited.then((code) => reject(new Error(`the demo exited (${code}):\n${stdout}\n${stderr}`)));
  });
  printed.catch(() => {});
  child.stderr.on("data", (d) => (stderr += d));
  return { child, exited, printed, output: () => ({ stdout, stderr }) };
}

describe("npm run demo", function () {
  this.timeout(120_000);
  const dirs: string[] = [];
  afterEach(async () => {
    for (const socket of connections.splice(0)) socket.destroy();
    await Promise.all(held.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it("names each taken port, what holds it and the variable that moves it, before starting anything", async () => {
    // An Outpost left running by `npm start` (its /healthz) on the dashboard's port, something else on the app's.
    const outpostLike = createHttpServer((req, res) => res.end(req.url === "/healthz" ? '{"status":"ok"}' : "")) as unknown as Server;
    const port = await hold(outpostLike);
    const appPort = await hold(createServer());
    const run = runDemo({ DEMO_PORT: String(port), DEMO_GAME_PORT: String(await freePort()), DEMO_APP_PORT: String(appPort) });
    assert.equal(await run.exited, 1);
    const { stdout, stderr } = run.output();
    assert.equal(stdout, "", "nothing started");
    assert.deepEqual(stderr.trim().split("\n"), [
      `demo: port ${port} (Outpost's dashboard and API) is in use (EADDRINUSE): another Outpost (npm start?) is using it; stop it or set DEMO_PORT, e.g. DEMO_PORT=${port + 100} npm run demo`,
      `demo: port ${appPort} (the example app) is in use (EADDRINUSE): another program is using it; stop it or set DEMO_APP_PORT, e.g. DEMO_APP_PORT=${appPort + 100} npm run demo`,
    ]);
  });

  it("when Outpost cannot start, says why, naming the port, and keeps the log it points to", async () => {
    // A port the demo does not choose: Outpost itself finds it taken.
    const metricsPort = await hold(createServer());
    const run = runDemo({
      DEMO_PORT: String(await freePort()),
      DEMO_GAME_PORT: String(await freePort()),
      DEMO_APP_PORT: String(await freePort()),
      METRICS_PORT: String(metricsPort),
    });
    assert.equal(await run.exited, 1);
    const { stderr } = run.output();
    const said = new RegExp(
      `^demo: Outpost exited \\(1\\): port ${metricsPort} is in use \\(EADDRINUSE\\), as Outpost's configuration asks for it; its log: (\\S+/outpost\\.log)$`,
      "m",
    ).exec(stderr);
    assert.ok(said, stderr);
    const log = said[1];
    dirs.push(dirname(log));
    assert.ok(existsSync(log), "the log is where the message points");
    assert.match(readFileSync(log, "utf8"), new RegExp(`EADDRINUSE.*:${metricsPort}`));
    assert.match(stderr, new RegExp(`^demo: kept ${dirname(log)} \\(Outpost's data and log\\); delete it when done$`, "m"));
  });

  it("prints the dashboard's address, email and password, which sign in there; Ctrl-C stops it and removes its data", async () => {
    const port = await freePort();
    const run = runDemo({ DEMO_PORT: String(port), DEMO_GAME_PORT: String(await freePort()), DEMO_APP_PORT: String(await freePort()) }, /Ctrl-C stops everything/);
    let dataDir: string | undefined;
    try {
      const stdout = await run.printed;
      dataDir = /embedded database in (\S+)\)/.exec(stdout)![1];
      const dashboard = /^Dashboard +(\S+) +sign in as (\S+), password "(.+)"$/m.exec(stdout);
      assert.ok(dashboard, stdout);
      const [, url, email, password] = dashboard;
      assert.equal(url, `http://localhost:${port}/app`);
      // The address leads a newcomer to the sign-in form…
      const page = await fetch(url);
      assert.equal(page.status, 200);
      assert.match(await page.text(), /<form[^>]+action="\/sign-in/);
      // …where the printed email and password sign in.
      const signIn = await fetch(`http://localhost:${port}/sign-in`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ email, password }),
      });
      assert.equal(signIn.status, 200, await signIn.text());
      run.child.kill("SIGINT");
      assert.equal(await run.exited, 0);
      assert.ok(!existsSync(dataDir), "a stop asked for removes the temporary data");
    } finally {
      // The demo stops its children on SIGINT (a SIGKILL would leave them running).
      if (run.child.exitCode === null && run.child.signalCode === null) {
        run.child.kill("SIGINT");
        await run.exited;
      }
      if (dataDir) dirs.push(dataDir);
    }
  });
});
