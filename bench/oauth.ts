/**
 * npm run bench:oauth — both OpenID Connect issuers on loopback, against a real `outpost serve` on a
 * fresh PostgreSQL database:
 *
 *  a) POST /oauth2/token: authorization codes minted through the real flow (hosted page → ALTCHA
 *     challenge solved here → in-game `/outpost login` and the player's confirmation played by
 *     in-process agents → the redirect URL
 *     pushed over server-sent events), a pool of them minted in parallel, then exchanged at 50
 *     connections with a request generator that takes the next code; exactly one request per code,
 *     reported as successful exchanges / the time from the first request to the last response.
 *  b) GET /oauth2/userinfo with one valid access token, 50 connections.
 *  c) report → redirect: for ≥ 200 sign-ins, the time from the agent sending the player's
 *     confirmation (after the login command claimed the sign-in) to the SSE reader of
 *     /oauth2/authorize/events receiving the redirect URL.
 *  d) the Account OAuth issuer (ACCOUNT_BASE_URL/api/auth), the same engine's other configuration:
 *     codes minted by a signed-in user's authorizations to a first-party (skipConsent) client, then
 *     exchanged like (a), and userinfo like (b); then its token endpoint again for a client of each
 *     other ID token algorithm (ES256, EdDSA), printed per algorithm.
 *
 *  e) for scale, the issue's yardstick rebuilt (bench/reference-server.ts: Koa + pg, one consume,
 *     one insert, one RS256 signature) measured like (a) once Outpost has stopped, so an absolute
 *     target set on one machine can be read on another. BENCH_REFERENCE=0 skips it.
 *
 * The load comes from bench/http-load.ts (BENCH_LOAD=autocannon: autocannon), whose own CPU per
 * request is printed: it runs on the same two cores as Outpost and PostgreSQL.
 *
 * Codes live 90 s, so the token run is made of BENCH_BATCHES batches (default 3): mint a pool, then
 * exchange it at once; throughput is all exchanges over the time spent exchanging.
 *
 * Every exchange comes from one address (127.0.0.1), and the Game OAuth token endpoint counts
 * requests per address under RATE_LIMIT_PER_MINUTE: startBenchServer sets it to 1,000,000, so the
 * limit is counted (its cost is part of the figure) but never reached. Every exchange authenticates
 * its client correctly, so none counts toward bad_credential_ip.
 *
 * The codes come from bench/oauth-sign-ins.ts, the measured runs are bench/oauth-runs.ts.
 *
 * Env: BENCH_POOL (codes per batch, default 1000), BENCH_MINT_CONCURRENCY (default 16, at most 20: the live-status streams one address may hold),
 * BENCH_SIGNINS (latency sign-ins, default 300), BENCH_LATENCY_CONCURRENCY (default 1: this process
 * solves the proof of work synchronously, which would stall the other sign-ins' readers),
 * BENCH_SECONDS (userinfo, default 10), BENCH_CONNECTIONS (default 50), BENCH_CPU_PROF=dir (runs
 * the server with --cpu-prof into that directory), BENCH_ALGS (the other ID token algorithms measured,
 * default "ES256,EdDSA"; "" for none).
 */
import { createServer } from "node:net";
import { Game } from "../gen/outpost/servers/v1/resources_pb.js";
import { PlayerAuth, startAgent, type Agent } from "../agent/client.ts";
import { watchesPerClientIp } from "../core/game-oauth/watches.ts";
import { runReference } from "./reference-token.ts";
import { accountCode, authorizeUrl, gameSignIn, inParallel, redirectUri } from "./oauth-sign-ins.ts";
import { tokenBatches, userinfoRun, type RunSettings, type TokenEndpoint } from "./oauth-runs.ts";
import { benchPassword, cpuPerRequest, loadAverages, loadGenerator, printFigures, seedApiKey, startBenchServer, type Figures } from "./support.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
const duration = Number(process.env.BENCH_SECONDS ?? 10);
const poolSize = Number(process.env.BENCH_POOL ?? 1000);
const batches = Number(process.env.BENCH_BATCHES ?? 3);
// Each sign-in being minted holds a live-status stream, and an instance allows only so many per client address.
const mintConcurrency = Math.min(Number(process.env.BENCH_MINT_CONCURRENCY ?? 16), watchesPerClientIp);
const latencySignIns = Number(process.env.BENCH_SIGNINS ?? 300);
const latencyConcurrency = Number(process.env.BENCH_LATENCY_CONCURRENCY ?? 1);
const cpuProfDir = process.env.BENCH_CPU_PROF;
const withReference = process.env.BENCH_REFERENCE !== "0";
const otherAlgs = (process.env.BENCH_ALGS ?? "ES256,EdDSA").split(",").filter(Boolean);

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

const basicAuth = (id: string, secret: string) => `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString("base64")}`;

const loadAtStart = loadAverages();
const gamePort = await freePort();
const gameIssuerUrl = `http://127.0.0.1:${gamePort}`;
const accountPort = await freePort();
const bench = await startBenchServer({
  PORT: String(accountPort),
  ACCOUNT_BASE_URL: `http://127.0.0.1:${accountPort}`,
  GAME_PORT: String(gamePort),
  GAME_ISSUER_URL: gameIssuerUrl,
  ...(cpuProfDir ? { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --cpu-prof --cpu-prof-dir=${cpuProfDir}`.trim() } : {}),
});
const settings: RunSettings = { connections, duration, poolSize, batches, serverPid: bench.serve.child.pid };
const agents: Agent[] = [];
/** Game OAuth exchanges/s, for the comparison with the reference. */
let gameTokenRate = 0;
try {
  const key = await seedApiKey(bench, "bench@example.com", true);
  const api = async (path: string, body: unknown): Promise<Json> => {
    const res = await fetch(`${bench.baseUrl}/api/http/${path}`, {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    const json = await res.json();
    if (!res.ok) throw new Error(`${path}: ${res.status} ${JSON.stringify(json)}`);
    return json;
  };
  await api("organizations/createOrganization", { name: "Bench", slug: "bench" });
  // Three servers (the free plan's limit), one in-process agent each (online auth).
  for (const name of ["Survival", "Creative", "Lobby"]) {
    const server = await api("servers/createServer", { organizationSlug: "bench", name, game: "minecraft" });
    const agent = startAgent({ url: bench.baseUrl, key: server.agentKey, game: Game.MINECRAFT, playerAuth: PlayerAuth.ONLINE, reconnect: false });
    await agent.connected(10_000);
    agents.push(agent);
  }
  const client = await api("organizations/createGameOAuthClient", {
    organizationSlug: "bench",
    name: "Bench app",
    redirectUris: [redirectUri],
    verifierPolicy: "any_server",
  });
  const gameAuthorize = authorizeUrl(`${gameIssuerUrl}/oauth2/authorize`, client.client.clientId, "openid profile");
  /** `count` sign-ins, `concurrency` at a time, spread over the agents. */
  const signIns = (count: number, concurrency: number) =>
    inParallel(count, concurrency, (worker) => gameSignIn(gameIssuerUrl, gameAuthorize, agents[worker % agents.length]));
  const gameToken: TokenEndpoint = { url: gameIssuerUrl, path: "/oauth2/token", authorization: basicAuth(client.client.clientId, client.clientSecret) };

  // c) report → redirect latency (also warms the whole sign-in path).
  await signIns(20, latencyConcurrency);
  const measured = await signIns(latencySignIns, latencyConcurrency);
  const latencies = measured.map((r) => r.reportToRedirectMs).sort((a, b) => a - b);
  const replies = measured.map((r) => r.reportToReplyMs).sort((a, b) => a - b);

  // a) the token endpoint.
  const {
    runs,
    seconds: tokenSeconds,
    ok: tokenOk,
    cpuMs: tokenCpuMs,
  } = await tokenBatches(
    settings,
    async (count) => (await signIns(count, mintConcurrency)).map((r) => r.code),
    gameToken,
    (batch, codes) => `POST /oauth2/token batch ${batch} (${codes} codes)`,
  );
  gameTokenRate = tokenOk / tokenSeconds;
  const minted = runs.reduce((t, r) => t + r.minted, 0);
  const mintSeconds = runs.reduce((t, r) => t + r.mintSeconds, 0);
  const oldestCodeAge = Math.max(...runs.map((r) => r.mintSeconds + r.seconds));

  // b) userinfo with one valid access token.
  const [one] = await signIns(1, 1);
  const { figures: userinfo, cpu: userinfoCpu } = await userinfoRun(
    settings,
    one.code,
    gameToken,
    `${gameIssuerUrl}/oauth2/userinfo`,
    "GET /oauth2/userinfo (one token)",
  );

  // d) Account OAuth: a first-party client, a signed-in user, codes from its authorizations.
  const accountClient = await api("admin/createAccountOAuthClient", { name: "Bench first-party app", redirectUris: [redirectUri], skipConsent: true });
  const signedIn = await fetch(`${bench.baseUrl}/sign-in`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email: "bench@example.com", password: benchPassword }),
  });
  if (signedIn.status !== 200) throw new Error(`sign-in: ${signedIn.status} ${await signedIn.text()}`);
  const sessionCookie = signedIn.headers.get("set-cookie")!.split(";")[0];
  const accountAuthorize = authorizeUrl(`${bench.baseUrl}/api/auth/oauth2/authorize`, accountClient.clientId, "openid profile email");
  const accountCodes = (count: number) => inParallel(count, mintConcurrency, () => accountCode(accountAuthorize, sessionCookie));
  const accountToken: TokenEndpoint = {
    url: bench.baseUrl,
    path: "/api/auth/oauth2/token",
    authorization: basicAuth(accountClient.clientId, accountClient.clientSecret),
  };
  const {
    runs: accountRuns,
    seconds: accountSeconds,
    ok: accountOk,
    cpuMs: accountCpuMs,
  } = await tokenBatches(settings, accountCodes, accountToken, (batch, codes) => `POST /api/auth/…/token batch ${batch} (${codes})`);
  const [oneAccountCode] = await accountCodes(1);
  const { figures: accountUserinfo, cpu: accountUserinfoCpu } = await userinfoRun(
    settings,
    oneAccountCode,
    accountToken,
    `${bench.baseUrl}/api/auth/oauth2/userinfo`,
    "GET /api/auth/…/userinfo (one token)",
  );

  // The token figure per ID token algorithm: Account OAuth clients alike but for it (their codes are the quickest to mint).
  const perAlg = [{ alg: "RS256", rate: accountOk / accountSeconds, cpu: cpuPerRequest(0, accountCpuMs, accountOk) }];
  for (const alg of otherAlgs) {
    const algClient = await api("admin/createAccountOAuthClient", {
      name: `Bench ${alg} app`,
      redirectUris: [redirectUri],
      skipConsent: true,
      idTokenSignedResponseAlg: alg,
    });
    const authorize = authorizeUrl(`${bench.baseUrl}/api/auth/oauth2/authorize`, algClient.clientId, "openid profile email");
    const codes = (count: number) => inParallel(count, mintConcurrency, () => accountCode(authorize, sessionCookie));
    const endpoint = { ...accountToken, authorization: basicAuth(algClient.clientId, algClient.clientSecret) };
    const run = await tokenBatches(settings, codes, endpoint, (batch, count) => `POST /api/auth/…/token ${alg} batch ${batch} (${count})`);
    perAlg.push({ alg, rate: run.ok / run.seconds, cpu: cpuPerRequest(0, run.cpuMs, run.ok) });
  }

  const generatorCpu = (rows: Figures[]) => Math.round(rows.reduce((t, r) => t + (r.generatorCpuMicros ?? 0), 0) / rows.length);
  console.log(`\nGame OAuth issuer, loopback, PostgreSQL, ${connections} connections`);
  console.log(
    `load generator: ${loadGenerator === "lean" ? "bench/http-load.ts (BENCH_LOAD=autocannon for autocannon)" : "autocannon"}, on the same 2 cores;` +
      ` its own CPU ${generatorCpu(runs.map((r) => r.figures))} µs per exchange, ${generatorCpu([userinfo])} µs per userinfo request`,
  );
  console.log(`load averages (1, 5, 15 min): ${loadAtStart} at the start, ${loadAverages()} at the end\n`);
  printFigures([...runs.map((r) => r.figures), userinfo]);
  const worstP99 = Math.max(...runs.map((r) => r.figures.p99));
  const medianP50 = runs.map((r) => r.figures.p50).sort((a, b) => a - b)[Math.floor(runs.length / 2)];
  console.log(
    `\ntoken: ${tokenOk} of ${minted} codes exchanged in ${tokenSeconds.toFixed(2)} s over ${runs.length} batches → ${gameTokenRate.toFixed(0)} exchanges/s` +
      ` (target ≥ 1,200/s), p50 ${medianP50} ms (median of batches), p99 ${worstP99} ms (worst batch)`,
  );
  console.log(
    `       codes minted through the real flow: ${minted} in ${mintSeconds.toFixed(1)} s (${(minted / mintSeconds).toFixed(0)} sign-ins/s, ${mintConcurrency} in parallel,` +
      ` ${agents.length} agents); oldest code ${oldestCodeAge.toFixed(0)} s old at the end of its batch (codes live 90 s)`,
  );
  console.log(`       Outpost's own CPU (user + system, all threads): ${cpuPerRequest(0, tokenCpuMs, tokenOk)} per exchange`);
  console.log(
    `userinfo: ${userinfo.requestsPerSecond.toFixed(0)} requests/s (target ≥ 4,000/s), p50 ${userinfo.p50} ms, p99 ${userinfo.p99} ms; Outpost's CPU ${userinfoCpu} per request`,
  );
  console.log(
    `report → redirect: ${latencies.length} sign-ins (${latencyConcurrency} at a time): p50 ${percentile(latencies, 50).toFixed(1)} ms,` +
      ` p99 ${percentile(latencies, 99).toFixed(1)} ms, max ${latencies.at(-1)!.toFixed(1)} ms (target p99 ≤ 50 ms)`,
  );
  console.log(
    `       (for comparison, report → the agent receiving the in-game reply: p50 ${percentile(replies, 50).toFixed(1)} ms, p99 ${percentile(replies, 99).toFixed(1)} ms)`,
  );

  console.log(`\nAccount OAuth issuer (${bench.baseUrl}/api/auth), same engine, same conditions\n`);
  printFigures([...accountRuns.map((r) => r.figures), accountUserinfo]);
  console.log(
    `\ntoken: ${accountOk} codes exchanged in ${accountSeconds.toFixed(2)} s over ${accountRuns.length} batches → ${(accountOk / accountSeconds).toFixed(0)} exchanges/s,` +
      ` p50 ${accountRuns.map((r) => r.figures.p50).sort((a, b) => a - b)[Math.floor(accountRuns.length / 2)]} ms, p99 ${Math.max(...accountRuns.map((r) => r.figures.p99))} ms;` +
      ` Outpost's CPU ${cpuPerRequest(0, accountCpuMs, accountOk)} per exchange`,
  );
  console.log(
    `userinfo: ${accountUserinfo.requestsPerSecond.toFixed(0)} requests/s, p50 ${accountUserinfo.p50} ms, p99 ${accountUserinfo.p99} ms; Outpost's CPU ${accountUserinfoCpu} per request`,
  );
  console.log(`\nAccount OAuth token endpoint by the client's ID token algorithm`);
  for (const { alg, rate, cpu } of perAlg) console.log(`  ${alg.padEnd(6)} ${rate.toFixed(0)} exchanges/s; Outpost's CPU ${cpu} per exchange`);
} catch (error) {
  // Said before the agents stop: their dropped connections would otherwise end the process first.
  console.error("bench:oauth failed:", error);
  throw error;
} finally {
  await Promise.all(agents.map((a) => a.stop().catch(() => {})));
  await bench.close();
}

if (withReference) {
  const reference = await runReference({ batches, perBatch: poolSize, connections });
  console.log(`\nReference on this machine (bench/reference-server.ts: Koa + pg, one consume, one insert, one RS256 via jose), same generator and connections\n`);
  printFigures(reference.batches);
  console.log(
    `\nreference token: ${reference.exchangesPerSecond.toFixed(0)} exchanges/s; its CPU ${reference.cpuMicros === undefined ? "n/a" : `${Math.round(reference.cpuMicros)} µs`} per exchange` +
      ` → Outpost's Game OAuth token endpoint at ${((gameTokenRate / reference.exchangesPerSecond) * 100).toFixed(0)} % of it` +
      ` (the issue measured the reference at ~1,200/s on the machine its targets were set on)`,
  );
}
