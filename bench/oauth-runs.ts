/**
 * The measured runs of bench/oauth.ts: exchanging a pool of codes at a token endpoint, exactly one
 * request per code (with bench/http-load.ts, or autocannon with BENCH_LOAD=autocannon), in
 * batches minted just before (codes live 90 s), and userinfo with one access token.
 */
import autocannon from "autocannon";
import { httpLoad } from "./http-load.ts";
import { codeVerifier, redirectUri } from "./oauth-sign-ins.ts";
import { cpuPerRequest, figuresOf, load, loadGenerator, processCpuMs, type Figures } from "./support.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

export interface TokenEndpoint {
  url: string;
  path: string;
  authorization: string;
}

/** How the runs go: the load's connections, userinfo's seconds, the codes per batch, the batches, and whose CPU is counted. */
export interface RunSettings {
  connections: number;
  duration: number;
  poolSize: number;
  batches: number;
  serverPid: number | undefined;
}

export interface Exchanged {
  figures: Figures;
  seconds: number;
  ok: number;
}

const exchangeBody = (code: string) => new URLSearchParams({ grant_type: "authorization_code", code, redirect_uri: redirectUri, code_verifier: codeVerifier }).toString();

/** autocannon's run of the exchanges, timed from the start to the last response. */
async function exchangeWithAutocannon(codes: string[], label: string, endpoint: TokenEndpoint, connections: number): Promise<Exchanged> {
  const headers = { authorization: endpoint.authorization, "content-type": "application/x-www-form-urlencoded" };
  let i = 0;
  // autocannon ends a run only at its next 1-second sample tick, so the run's own duration rounds
  // up to whole seconds: time the run from the start to the last response instead.
  let lastResponse = 0;
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url: endpoint.url,
        connections,
        amount: codes.length,
        requests: [{ method: "POST", path: endpoint.path, headers, setupRequest: (req) => ({ ...req, body: exchangeBody(codes[i++ % codes.length]) }) }],
      },
      (error, res) => (error ? reject(error) : resolve(res)),
    );
    instance.on("response", () => (lastResponse = performance.now()));
  });
  const cpu = process.cpuUsage(cpuBefore);
  const seconds = (lastResponse - started) / 1000;
  const figures: Figures = {
    name: label,
    requestsPerSecond: result["2xx"] / seconds,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
    generatorCpuMicros: (cpu.user + cpu.system) / Math.max(1, codes.length),
  };
  return { figures, seconds, ok: result["2xx"] };
}

/** Exchanges every code once (the request generator takes the next code). */
export async function exchangeAll(codes: string[], label: string, endpoint: TokenEndpoint, connections: number): Promise<Exchanged> {
  if (loadGenerator !== "lean") return exchangeWithAutocannon(codes, label, endpoint, connections);
  const headers = { authorization: endpoint.authorization, "content-type": "application/x-www-form-urlencoded" };
  const result = await httpLoad({
    url: endpoint.url,
    connections,
    amount: codes.length,
    request: (i) => ({ method: "POST", path: endpoint.path, headers, body: exchangeBody(codes[i]) }),
  });
  return { figures: figuresOf(label, result), seconds: result.seconds, ok: result.ok };
}

/** A warm-up pool, then `batches` measured pools, each minted and then exchanged at once. */
export async function tokenBatches(
  settings: RunSettings,
  mint: (count: number) => Promise<string[]>,
  endpoint: TokenEndpoint,
  label: (batch: number, codes: number) => string,
) {
  await exchangeAll(await mint(Math.min(1000, settings.poolSize)), "warm-up", endpoint, settings.connections);
  const runs: Array<Exchanged & { minted: number; mintSeconds: number }> = [];
  let cpuMs: number | undefined = 0;
  for (let b = 0; b < settings.batches; b++) {
    const mintStarted = performance.now();
    const pool = await mint(settings.poolSize);
    const mintSeconds = (performance.now() - mintStarted) / 1000;
    const cpuBefore = processCpuMs(settings.serverPid);
    runs.push({ ...(await exchangeAll(pool, label(b + 1, pool.length), endpoint, settings.connections)), minted: pool.length, mintSeconds });
    const cpuAfter = processCpuMs(settings.serverPid);
    cpuMs = cpuMs === undefined || cpuBefore === undefined || cpuAfter === undefined ? undefined : cpuMs + cpuAfter - cpuBefore;
  }
  return { runs, cpuMs, seconds: runs.reduce((t, r) => t + r.seconds, 0), ok: runs.reduce((t, r) => t + r.ok, 0) };
}

/** Userinfo with the access token of one fresh code: a warm-up, then the measured run. */
export async function userinfoRun(settings: RunSettings, code: string, endpoint: TokenEndpoint, userinfoUrl: string, label: string) {
  const exchanged = await fetch(endpoint.url + endpoint.path, {
    method: "POST",
    headers: { authorization: endpoint.authorization, "content-type": "application/x-www-form-urlencoded" },
    body: exchangeBody(code),
  });
  if (exchanged.status !== 200) throw new Error(`${endpoint.path}: ${exchanged.status} ${await exchanged.text()}`);
  const target = { url: userinfoUrl, headers: { authorization: `Bearer ${((await exchanged.json()) as Json).access_token}` }, connections: settings.connections };
  await load("warm-up", { ...target, duration: 3 });
  const cpuBefore = processCpuMs(settings.serverPid);
  const figures = await load(label, { ...target, duration: settings.duration });
  return { figures, cpu: cpuPerRequest(cpuBefore, processCpuMs(settings.serverPid), figures.requests ?? 0) };
}
