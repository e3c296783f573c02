import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { createTestDatabase, type TestDatabase } from "../support/database.ts";
import { startServe, type ServeProcess } from "../support/process.ts";
import { freePort } from "../support/outpost.ts";
import { openHostedPage, seedGameOAuth, type HostedSignIn, type Seeded } from "../support/game-oauth.ts";
import { startAgentRun, type AgentProcess } from "../support/agent.ts";

const redirectUri = "http://127.0.0.1:9/callback";

/** Fetches `url`; the error's cause code (ECONNREFUSED…) when no connection could be made. */
async function attempt(url: string): Promise<{ status: number; body: string } | { refused: string }> {
  try {
    const res = await fetch(url);
    return { status: res.status, body: await res.text() };
  } catch (error) {
    return { refused: ((error as Error).cause as NodeJS.ErrnoException)?.code ?? String(error) };
  }
}

/** Opens a new TCP connection and closes it: "connected", or the error's code. */
function connect(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1", () => {
      socket.destroy();
      resolve("connected");
    });
    socket.on("error", (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
  });
}

/**
 * A request whose body is still on its way: the headers and half the body now, the rest when
 * `finish` is called; resolves with the raw response (if any) once the server has closed the connection.
 */
function slowRequest(port: number, path: string, headers: Record<string, string>, body: string) {
  const socket = net.connect(port, "127.0.0.1");
  let response = "";
  socket.setEncoding("utf8").on("data", (chunk) => (response += chunk));
  // A connection cut by the server (reset, when it never read the whole body) ends it as well.
  socket.on("error", () => {});
  const answered = new Promise<string>((resolve) => socket.on("close", () => resolve(response)));
  const head = Object.entries({ host: `127.0.0.1:${port}`, "content-type": "application/json", "content-length": String(Buffer.byteLength(body)), ...headers })
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join("");
  const half = Math.floor(body.length / 2);
  const sent = new Promise<void>((resolve) => socket.once("connect", () => socket.write(`POST ${path} HTTP/1.1\r\n${head}\r\n${body.slice(0, half)}`, () => resolve())));
  return { sent, answered, finish: () => socket.write(body.slice(half)) };
}

/**
 * `outpost serve` and SIGTERM, with a proxy's view of it: /readyz turns 503 while requests are
 * still taken (SHUTDOWN_DELAY_MS), then new connections are refused, a request in flight still
 * gets its answer, the hosted page's live status ends with a reconnect hint, the agent is told to
 * reconnect (and does not give up), and the process exits 0 before SHUTDOWN_TIMEOUT_MS would force it.
 */
describe("outpost serve: graceful shutdown", function () {
  this.timeout(120_000);
  let dataDir: string;
  let database: TestDatabase | undefined;
  let serve: ServeProcess | undefined;
  let agent: AgentProcess | undefined;
  let seeded: Seeded;
  let page: HostedSignIn;
  let baseUrl: string;

  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "outpost-shutdown-"));
    if (process.env.DATABASE_URL) database = await createTestDatabase();
    const gamePort = await freePort();
    serve = await startServe({
      DATA_DIR: dataDir,
      DATABASE_URL: database?.url ?? "",
      GAME_PORT: String(gamePort),
      GAME_ISSUER_URL: `http://127.0.0.1:${gamePort}`,
      SHUTDOWN_DELAY_MS: "1500",
      SHUTDOWN_TIMEOUT_MS: "8000",
    });
    baseUrl = `http://127.0.0.1:${serve.port}`;
    seeded = await seedGameOAuth(baseUrl, [redirectUri]);
    const url = new URL(`http://127.0.0.1:${gamePort}/oauth2/authorize`);
    url.search = new URLSearchParams({ response_type: "code", client_id: seeded.clientId, redirect_uri: redirectUri, scope: "openid profile", state: "s" }).toString();
    page = await openHostedPage(url);
    await page.opened;
    agent = startAgentRun(["--url", baseUrl, "--key", seeded.agentKey]);
    await agent.waitFor(/connected to /);
  });

  after(async () => {
    await agent?.stop("SIGKILL");
    if (serve && serve.child.exitCode === null) serve.child.kill("SIGKILL");
    await database?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("goes unready, refuses new connections, finishes what is in flight, ends the streams with a reconnect hint and exits 0", async () => {
    assert.deepEqual(await attempt(`${baseUrl}/readyz`), { status: 200, body: JSON.stringify({ status: "ready" }) });
    const inFlight = slowRequest(
      serve!.port,
      "/api/http/organizations/createOrganization",
      { "x-api-key": seeded.apiKey },
      JSON.stringify({ name: "Late", slug: "late" }),
    );
    await inFlight.sent;
    const exited = new Promise<number | null>((resolve) => serve!.child.once("close", (code) => resolve(code)));
    serve!.child.kill("SIGTERM");

    // First unready, while still answering: a proxy polling /readyz stops sending requests here.
    let ready = await attempt(`${baseUrl}/readyz`);
    while ("status" in ready && ready.status === 200) ready = await sleep(20).then(() => attempt(`${baseUrl}/readyz`));
    assert.deepEqual(ready, { status: 503, body: JSON.stringify({ status: "shutting_down" }) });

    // Then no new connection is taken.
    let connecting = await connect(serve!.port);
    while (connecting === "connected") connecting = await sleep(20).then(() => connect(serve!.port));
    assert.equal(connecting, "ECONNREFUSED");

    // The request in flight still gets its whole answer.
    inFlight.finish();
    const response = await inFlight.answered;
    assert.match(response, /^HTTP\/1\.1 200 /);
    assert.match(response, /"slug":"late"/);

    // The hosted page's live status ended with a reconnect hint (retry and an `unavailable` event).
    await page.ended;
    assert.match(page.transcript(), /retry: 1000\nevent: unavailable\ndata: \{"reason":"shutting_down"\}\n\n$/);

    // The agent was told Outpost is going away, and keeps trying to reconnect (it does not stop).
    await agent!.waitFor(/disconnected \(Outpost is shutting down; reconnect in a moment\); reconnecting in/);
    assert.equal(agent!.child.exitCode, null);

    // Exit 0: the shutdown finished by itself (SHUTDOWN_TIMEOUT_MS forces exit 1).
    assert.equal(await exited, 0, serve!.output());
    assert.match(serve!.output(), /"msg":"Outpost stopped"/);
    // Off a terminal the log is JSON, one object a line; every request's line carries its id.
    const lines = serve!
      .output()
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line));
    const requests = lines.filter((line) => line.msg === "request");
    assert.ok(requests.length > 10);
    for (const line of requests) assert.match(line.requestId, /^[\w.-]{8,64}$/, JSON.stringify(line));
  });

  it("does not wait past its bound for a request that never ends: the connection is cut and the process exits", async () => {
    await agent?.stop("SIGKILL");
    serve = await startServe({ DATA_DIR: dataDir, DATABASE_URL: database?.url ?? "", SHUTDOWN_TIMEOUT_MS: "2000" });
    const stuck = slowRequest(serve.port, "/api/http/organizations/createOrganization", { "x-api-key": seeded.apiKey }, JSON.stringify({ name: "Never", slug: "never" }));
    await stuck.sent;
    const exited = new Promise<number | null>((resolve) => serve!.child.once("close", (code) => resolve(code)));
    serve.child.kill("SIGTERM");
    // Cut without an answer (its body never came), and the shutdown still ends by itself.
    assert.equal(await stuck.answered, "");
    assert.equal(await exited, 0, serve.output());
  });
});
