/**
 * The agent suites' Outpost: one instance with an owner, an API key and the organization "acme"
 * (a plan of 50 servers), and the helpers the suites share: servers made and read through the HTTP
 * API as their owners do, and the real `outpost-agent` process run against it. Agents a test
 * started are killed after it.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { startTestOutpost, type TestOutpost } from "../support/outpost.ts";
import { runAgent, startAgentRun, type AgentProcess } from "../support/agent.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- JSON from the HTTP API, read field by field
export type Json = any;

/** Starts the Outpost in the calling suite's `before` and stops it in its `after`; the helpers use it. */
// eslint-disable-next-line max-lines-per-function -- the suite's shared helpers, each a few lines, closing over its Outpost
export function useAgentOutpost() {
  let t: TestOutpost;
  let apiKey: string;
  const agents: AgentProcess[] = [];

  const api = async (method: "GET" | "POST", path: string, body?: unknown): Promise<Json> => {
    const res = await fetch(`${t.baseUrl}/api/http/${path}`, {
      method,
      headers: { "x-api-key": apiKey, ...(body ? { "content-type": "application/json" } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const json = await res.json();
    assert.equal(res.status, 200, JSON.stringify(json));
    return json;
  };
  const createServer = async (name: string, game = "minecraft"): Promise<{ id: string; key: string }> => {
    const { server, agentKey } = await api("POST", "servers/createServer", { organizationSlug: "acme", name, game });
    return { id: server.id, key: agentKey };
  };
  const getServer = async (id: string) => (await api("GET", `servers/getServer?serverId=${id}`)).server;
  /** Polls the server until `check` holds (every 100 ms, up to `withinMs`); returns how long it took. */
  const eventually = async (id: string, check: (server: Json) => boolean, withinMs = 5_000): Promise<number> => {
    const started = Date.now();
    for (;;) {
      const server = await getServer(id);
      if (check(server)) return Date.now() - started;
      if (Date.now() - started > withinMs) assert.fail(`server did not reach the state within ${withinMs} ms: ${JSON.stringify(server)}`);
      await sleep(100);
    }
  };
  const run = (key: string, ...extra: string[]) => {
    const agent = startAgentRun(["--url", t.baseUrl, "--key", key, ...extra]);
    agents.push(agent);
    return agent;
  };
  const simulate = (key: string, command: string, options: { name?: string; uuid?: string; extra?: string[] } = {}) =>
    runAgent([
      "simulate",
      "--url",
      t.baseUrl,
      "--key",
      key,
      "--player-name",
      options.name ?? "Steve",
      "--player-uuid",
      options.uuid ?? "123e4567-e89b-12d3-a456-426614174000",
      ...(options.extra ?? []),
      "--",
      command,
    ]);
  /** Plays `text` as `player` on a running agent's console and resolves with the reply. */
  const play = async (agent: AgentProcess, player: { name: string; uuid: string }, text: string): Promise<string> => {
    const since = agent.output().length;
    agent.send(`${player.name} ${player.uuid} ${text}`);
    const [, reply] = await agent.waitFor(new RegExp(`\\[to ${player.name}\\] (.*)\\n`), since);
    return reply;
  };
  const newPlayer = (name: string) => ({ name, uuid: randomUUID() });

  before(async () => {
    t = await startTestOutpost({ PLANS: '{"free":{"servers":50,"gameOAuthClients":2}}' });
    const origin = "http://localhost:3000";
    const signUp = await fetch(`${t.baseUrl}/sign-up`, {
      method: "POST",
      headers: { "content-type": "application/json", origin },
      body: JSON.stringify({ email: "owner@example.com", password: "a long password", name: "Owner" }),
    });
    assert.equal(signUp.status, 201);
    const cookie = signUp.headers.get("set-cookie")!.split(";")[0];
    const created = await fetch(`${t.baseUrl}/api/http/auth/createApiKey`, {
      method: "POST",
      headers: { cookie, origin, "content-type": "application/json" },
      body: JSON.stringify({ name: "tests", expiresInDays: 30 }),
    });
    apiKey = ((await created.json()) as Json).key;
    await api("POST", "organizations/createOrganization", { name: "Acme", slug: "acme" });
  });
  afterEach(async () => {
    await Promise.all(agents.splice(0).map((agent) => agent.stop("SIGKILL")));
  });
  after(async () => {
    await t?.close();
  });

  return { outpost: () => t, apiKey: () => apiKey, api, createServer, getServer, eventually, run, simulate, play, newPlayer };
}
