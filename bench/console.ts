/**
 * npm run bench:console — a console command's whole round trip on loopback: POST
 * /api/http/servers/executeConsoleCommand with an API key → core → the server's agent over its
 * HTTP/2 stream (the real `startAgent` transport, in this process) → the agent's console handler,
 * which answers at once → the output back in the response. 20 concurrent callers (the issue's
 * figure) against a real `outpost serve` on a fresh PostgreSQL database; prints requests/s,
 * p50/p99 (target p99 ≤ 20 ms) and the server's CPU per command.
 *
 * The figure is Outpost's own path, with an agent whose console answers at once. On a wrapped
 * server a command's answer also waits for the console to go quiet (wrap's quiet window,
 * `quietMs` in agent/wrap-console.ts), which no setting of Outpost can shorten; the target leaves
 * it out. As bench/oauth.ts and bench/http-api.ts do, a missed target is printed as such and the
 * run still exits 0 (the figures depend on the machine); an error or a non-2xx answer exits 1.
 *
 * Env: BENCH_SECONDS (default 5), BENCH_CONNECTIONS (default 20), BENCH_LOAD=autocannon,
 * BENCH_CPU_PROF=dir (runs the server with --cpu-prof into that directory).
 */
import { Game } from "../gen/outpost/servers/v1/resources_pb.js";
import { PlayerAuth, startAgent, type Agent } from "../agent/client.ts";
import { cpuPerRequest, load, loadAverages, loadGenerator, printFigures, processCpuMs, seedApiKey, startBenchServer } from "./support.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const duration = Number(process.env.BENCH_SECONDS ?? 5);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 20);
const targetP99Ms = 20;
const cpuProfDir = process.env.BENCH_CPU_PROF;

const loadAtStart = loadAverages();
const bench = await startBenchServer(cpuProfDir ? { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --cpu-prof --cpu-prof-dir=${cpuProfDir}`.trim() } : {});
let agent: Agent | undefined;
try {
  const key = await seedApiKey(bench, "bench@example.com");
  const headers = { "x-api-key": key, "content-type": "application/json" };
  const api = async (path: string, body: unknown) => {
    const r = await fetch(`${bench.baseUrl}/api/http/${path}`, { method: "POST", headers, body: JSON.stringify(body) });
    if (!r.ok) throw new Error(`${path}: ${r.status} ${await r.text()}`);
    return (await r.json()) as Json;
  };
  await api("organizations/createOrganization", { name: "Bench", slug: "bench" });
  const { server, agentKey } = await api("servers/createServer", { organizationSlug: "bench", name: "Survival", game: "minecraft" });

  // The game's console, as fast as it can be: the command's output is one line, at once.
  agent = startAgent({
    url: bench.baseUrl,
    key: agentKey,
    game: Game.MINECRAFT,
    playerAuth: PlayerAuth.ONLINE,
    reconnect: false,
    console: async (command) => ({ success: true, output: [`[Server] ran ${command}`] }),
  });
  await agent.connected(10_000);

  const body = JSON.stringify({ serverId: server.id, command: "list" });
  const check = await api("servers/executeConsoleCommand", { serverId: server.id, command: "list" });
  if (!check.success || check.output?.[0] !== "[Server] ran list") throw new Error(`unexpected answer: ${JSON.stringify(check)}`);

  const request = { url: `${bench.baseUrl}/api/http/servers/executeConsoleCommand`, method: "POST" as const, headers, body, connections };
  await load("warm-up", { ...request, duration: 2 });
  const serverPid = bench.serve.child.pid;
  const cpuBefore = processCpuMs(serverPid);
  const figures = await load("POST /api/http/servers/executeConsoleCommand", { ...request, duration });
  const cpu = cpuPerRequest(cpuBefore, processCpuMs(serverPid), figures.requests ?? 0);

  console.log(`\nservers/executeConsoleCommand → agent → output, ${connections} concurrent callers, ${duration} s, loopback, PostgreSQL, load: ${loadGenerator}\n`);
  printFigures([figures]);
  console.log(`\nOutpost's CPU per command: ${cpu}`);
  console.log(`the bench process (load generator and agent) CPU per command: ${Math.round(figures.generatorCpuMicros ?? 0)} µs`);
  console.log(`p99 ${figures.p99} ms, target ≤ ${targetP99Ms} ms: ${figures.p99 <= targetP99Ms ? "met" : "NOT MET"}`);
  console.log(`(Outpost's path with an agent that answers at once; a wrapped server adds its quiet window after each command's output)`);
  console.log(`load averages (1, 5, 15 min): ${loadAtStart} at the start, ${loadAverages()} at the end`);
  if (figures.errors || figures.non2xx) process.exitCode = 1;
} finally {
  await agent?.stop();
  await bench.close();
}
