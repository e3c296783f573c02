/**
 * npm run bench:api — servers/listServers through the HTTP API against the same call made straight
 * to the Connect endpoint, on loopback, 50 connections. Prints requests/s, p50/p99 and the ratio.
 */
import { load, printFigures, seedApiKey, startBenchServer } from "./support.ts";

const duration = Number(process.env.BENCH_SECONDS ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);

const bench = await startBenchServer();
try {
  const key = await seedApiKey(bench, "bench@example.com");
  const headers = { "x-api-key": key, "content-type": "application/json" };
  const post = (path: string, body: unknown) =>
    fetch(bench.baseUrl + path, { method: "POST", headers, body: JSON.stringify(body) }).then(async (r) => {
      if (!r.ok) throw new Error(`${path}: ${r.status} ${await r.text()}`);
    });
  await post("/api/http/organizations/createOrganization", { name: "Bench", slug: "bench" });
  for (const name of ["Survival", "Creative", "Lobby"]) {
    await post("/api/http/servers/createServer", { organizationSlug: "bench", name, game: "minecraft" });
  }

  const httpApi = { url: `${bench.baseUrl}/api/http/servers/listServers?organizationSlug=bench`, headers: { "x-api-key": key } };
  const connect = {
    url: `${bench.baseUrl}/api/rpc/outpost.servers.v1.ServersService/ListServers`,
    method: "POST" as const,
    headers,
    body: JSON.stringify({ organizationSlug: "bench" }),
  };
  // Warm both paths (JIT, connection pool) before measuring.
  await load("warm-up", { ...httpApi, duration: 3, connections });
  await load("warm-up", { ...connect, duration: 3, connections });
  const rows = [
    await load("GET /api/http/servers/listServers", { ...httpApi, duration, connections }),
    await load("POST /api/rpc/…ServersService/ListServers", { ...connect, duration, connections }),
  ];
  console.log(`\nservers/listServers, ${connections} connections, ${duration} s each, loopback, PostgreSQL\n`);
  printFigures(rows);
  console.log(`\nHTTP API / direct Connect throughput: ${((rows[0].requestsPerSecond / rows[1].requestsPerSecond) * 100).toFixed(1)} % (target ≥ 85 %)`);
} finally {
  await bench.close();
}
