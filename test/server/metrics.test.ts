import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { startTestOutpost, type TestOutpost } from "../support/outpost.ts";
import { openHostedPage, seedGameOAuth, type Seeded } from "../support/game-oauth.ts";
import { signInInGame, startAgentRun, type AgentProcess } from "../support/agent.ts";

const token = "metrics-token-0123456789abcdef";
const redirectUri = "http://127.0.0.1:9/callback";

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a Prometheus text exposition (comments left out). */
function parse(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split("\n")) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) continue;
    const labels: Record<string, string> = {};
    for (const [, name, value] of (match[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[name] = value;
    samples.push({ name: match[1], labels, value: Number(match[3]) });
  }
  return samples;
}

/** The sum of the samples named so whose labels include `labels` (0 when there are none). */
function total(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  return samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)).reduce((sum, s) => sum + s.value, 0);
}

/**
 * /metrics on a whole Outpost: protected on the main port, served on METRICS_PORT, and counting
 * what the product did (API calls by route template, a hosted sign-in started and completed, the
 * token exchange and a replayed code, a rate-limit refusal, an agent connected, the pools).
 */
describe("metrics", function () {
  this.timeout(120_000);
  let t: TestOutpost;
  let seeded: Seeded;
  const agents: AgentProcess[] = [];

  const scrape = async (url = `${t.baseUrl}/metrics`): Promise<Sample[]> => {
    const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type")!, /^text\/plain; version=0\.0\.4/);
    return parse(await res.text());
  };

  before(async () => {
    t = await startTestOutpost({ METRICS_TOKEN: token, METRICS_PORT: "0", SIGN_IN_ATTEMPTS_PER_ACCOUNT_IP_PER_15_MIN: "2" });
    seeded = await seedGameOAuth(t.baseUrl, [redirectUri]);
  });
  after(async () => {
    await Promise.all(agents.map((agent) => agent.stop("SIGKILL")));
    await t?.close();
  });

  it("answers /metrics on the main port only with the token, compared as a bearer token", async () => {
    assert.equal((await fetch(`${t.baseUrl}/metrics`)).status, 401);
    const wrong = await fetch(`${t.baseUrl}/metrics`, { headers: { authorization: `Bearer ${token}x` } });
    assert.equal(wrong.status, 401);
    assert.equal(wrong.headers.get("www-authenticate"), 'Bearer realm="metrics"');
    assert.equal((await fetch(`${t.baseUrl}/metrics`, { headers: { authorization: token } })).status, 401);
    const samples = await scrape();
    // prom-client's default process metrics are there too.
    assert.ok(total(samples, "process_cpu_user_seconds_total") > 0);
    assert.ok(samples.some((s) => s.name === "nodejs_eventloop_lag_seconds"));
  });

  it("serves the same metrics on METRICS_PORT, on loopback, and nothing else there", async () => {
    const port = t.outpost.metricsPort!;
    assert.ok(port > 0);
    assert.equal((await fetch(`http://127.0.0.1:${port}/metrics`)).status, 401);
    assert.ok((await scrape(`http://127.0.0.1:${port}/metrics`)).some((s) => s.name === "outpost_http_requests_total"));
    assert.equal((await fetch(`http://127.0.0.1:${port}/readyz`)).status, 404);
  });

  it("counts HTTP requests by route template and status, never by a path with ids in it", async () => {
    const serverId = seeded.serverId;
    await seeded.api("GET", `servers/listServers?organizationSlug=acme`);
    // A dashboard page with ids in its path (redirected to sign in: no session cookie).
    await fetch(`${t.baseUrl}/app/o/acme/servers/${serverId}`, { redirect: "manual" });
    await fetch(`${t.baseUrl}/no/such/${randomUUID()}`);
    const samples = await scrape();
    const requests = (labels: Record<string, string>) => total(samples, "outpost_http_requests_total", labels);
    assert.equal(requests({ server: "account", method: "POST", route: "/api/http/servers/createServer", status: "200" }), 1);
    assert.equal(requests({ server: "account", method: "GET", route: "/api/http/servers/listServers", status: "200" }), 1);
    assert.ok(requests({ server: "account", route: "/app/o/:slug/servers/:id" }) >= 1);
    assert.ok(requests({ server: "account", route: "unmatched", status: "404" }) >= 1);
    assert.ok(total(samples, "outpost_http_request_duration_seconds_count", { route: "/api/http/servers/createServer" }) >= 1);
    const labelValues = samples.flatMap((s) => Object.values(s.labels));
    assert.ok(!labelValues.some((v) => v.includes(serverId) || v.includes("/no/such")), "a raw path became a label");
  });

  it("counts a hosted sign-in started and completed, and token exchanges by issuer and outcome", async () => {
    const before = await scrape();
    const url = new URL(`${t.gameIssuerUrl}/oauth2/authorize`);
    url.search = new URLSearchParams({ response_type: "code", client_id: seeded.clientId, redirect_uri: redirectUri, scope: "openid profile", state: "s" }).toString();
    const page = await openHostedPage(url);
    const played = await signInInGame(t.baseUrl, seeded.agentKey, { name: "Steve", uuid: randomUUID() }, page.command.toLowerCase());
    assert.equal(played.code, 0, played.stdout + played.stderr);
    const code = (await page.redirect).searchParams.get("code")!;
    const exchange = () =>
      fetch(`${t.gameIssuerUrl}/oauth2/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ grant_type: "authorization_code", code, redirect_uri: redirectUri, client_id: seeded.clientId, client_secret: seeded.clientSecret }),
      });
    assert.equal((await exchange()).status, 200);
    assert.equal((await exchange()).status, 400); // the code again: invalid_grant
    const after = await scrape();
    const moved = (name: string, labels: Record<string, string> = {}) => total(after, name, labels) - total(before, name, labels);
    assert.equal(moved("outpost_game_sign_ins_started_total"), 1);
    assert.equal(moved("outpost_game_sign_ins_completed_total"), 1);
    assert.equal(moved("outpost_token_exchanges_total", { issuer: "game", outcome: "issued" }), 1);
    assert.equal(moved("outpost_token_exchanges_total", { issuer: "game", outcome: "invalid_grant" }), 1);
    assert.equal(moved("outpost_http_requests_total", { server: "game", method: "POST", route: "/oauth2/token", status: "200" }), 1);
  });

  it("counts rate-limit refusals by the limit's name", async () => {
    const signIn = () =>
      fetch(`${t.baseUrl}/sign-in`, {
        method: "POST",
        headers: { "content-type": "application/json", origin: "http://localhost:3000" },
        body: JSON.stringify({ email: "owner@example.com", password: "not the password" }),
      });
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await signIn()).status);
    assert.deepEqual(statuses, [401, 401, 429]);
    assert.equal(total(await scrape(), "outpost_rate_limit_refusals_total", { limit: "sign_in_account_ip" }), 1);
  });

  it("shows the agents connected here and the database pools' use", async () => {
    const agent = startAgentRun(["--url", t.baseUrl, "--key", seeded.agentKey]);
    agents.push(agent);
    await agent.waitFor(/connected to /);
    let samples = await scrape();
    // The stream holds its server once its Hello is handled, just after the agent hears back.
    while (total(samples, "outpost_agents_connected") === 0) samples = await sleep(50).then(() => scrape());
    assert.equal(total(samples, "outpost_agents_connected"), 1);
    assert.ok(total(samples, "outpost_db_pool_connections", { pool: "orm", state: "total" }) >= 1);
    assert.ok(samples.some((s) => s.name === "outpost_db_pool_waiting" && s.labels.pool === "orm"));
    assert.ok(samples.some((s) => s.name === "outpost_bus_pending_messages"));
    await agent.stop("SIGKILL");
    while (total(samples, "outpost_agents_connected") !== 0) samples = await sleep(50).then(() => scrape());
  });
});

describe("metrics by default", function () {
  this.timeout(60_000);
  let t: TestOutpost;
  before(async () => {
    t = await startTestOutpost();
  });
  after(async () => {
    await t?.close();
  });

  it("are not served on the main port without METRICS_TOKEN, and no listener of their own without METRICS_PORT", async () => {
    assert.equal((await fetch(`${t.baseUrl}/metrics`)).status, 404);
    assert.equal((await fetch(`${t.baseUrl}/metrics`, { headers: { authorization: "Bearer anything-at-all-here" } })).status, 404);
    assert.equal(t.outpost.metricsPort, undefined);
  });
});
