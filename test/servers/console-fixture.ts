/**
 * The setting of the console suites: a whole Outpost with an organization (an owner with an API
 * key and a dashboard session, a member, an outsider), servers, and agents of the real agent
 * library over h2c, stopped after each test.
 */
import assert from "node:assert/strict";
import { Game, PlayerAuth } from "../../gen/outpost/servers/v1/resources_pb.js";
import { startAgent, type Agent, type AgentOptions } from "../../agent/client.ts";
import { startTestOutpost, type TestOutpost } from "../support/outpost.ts";
import { verifyEmail } from "../support/fixtures.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any;

export const origin = "http://localhost:3000";

/** Signs up through /sign-up; returns the session cookie and an API key. */
async function signUpWithKey(baseUrl: string, email: string): Promise<{ cookie: string; key: string }> {
  const signUp = await fetch(`${baseUrl}/sign-up`, {
    method: "POST",
    headers: { "content-type": "application/json", origin },
    body: JSON.stringify({ email, password: "a long password", name: email.split("@")[0] }),
  });
  assert.equal(signUp.status, 201);
  const session = signUp.headers.get("set-cookie")!.split(";")[0];
  const created = await fetch(`${baseUrl}/api/http/auth/createApiKey`, {
    method: "POST",
    headers: { cookie: session, origin, "content-type": "application/json" },
    body: JSON.stringify({ name: "tests", expiresInDays: 30 }),
  });
  const body = (await created.json()) as Json;
  return { cookie: session, key: body.key as string };
}

/** Registers the hooks of a console suite (call it in its describe) and gives what its tests use. */
export function useConsoleSetting() {
  let t: TestOutpost;
  let apiKey: string;
  let cookie: string;
  let memberKey: string;
  let memberId: string;
  let outsiderKey: string;
  const agents: Agent[] = [];

  const account = (email: string) => signUpWithKey(t.baseUrl, email);
  const call = async (method: "GET" | "POST", path: string, body: unknown, auth: { key?: string; cookie?: string }) => {
    const res = await fetch(`${t.baseUrl}/api/http/${path}`, {
      method,
      headers: {
        ...(auth.key ? { "x-api-key": auth.key } : { cookie: auth.cookie!, origin }),
        ...(body ? { "content-type": "application/json" } : {}),
      },
      body: body ? JSON.stringify(body) : undefined,
    });
    return { status: res.status, body: (await res.json()) as Json };
  };
  const api = async (method: "GET" | "POST", path: string, body?: unknown) => {
    const res = await call(method, path, body, { key: apiKey });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body;
  };
  const execute = (serverId: string, command: string, auth: { key?: string; cookie?: string } = { key: apiKey }) =>
    call("POST", "servers/executeConsoleCommand", { serverId, command }, auth);
  const createServer = async (name: string) => {
    const { server, agentKey } = await api("POST", "servers/createServer", { organizationSlug: "acme", name, game: "minecraft" });
    return { id: server.id as string, key: agentKey as string };
  };
  const connect = async (key: string, options: Partial<AgentOptions> = {}) => {
    const agent = startAgent({ url: t.baseUrl, key, game: Game.MINECRAFT, playerAuth: PlayerAuth.ONLINE, reconnect: false, ...options });
    agents.push(agent);
    await agent.connected();
    return agent;
  };
  /** A console that answers each command with what it ran. */
  const echo: AgentOptions["console"] = async (command) => ({ success: true, output: [`> ${command}`, "done"] });
  const consoleEvents = async (serverId: string) => {
    const { events } = await api("GET", `activity/listOrganizationActivity?organizationSlug=acme&serverId=${serverId}&action=server.console_command`);
    return (events as Json[]).reverse();
  };

  before(async () => {
    t = await startTestOutpost({ PLANS: '{"free":{"servers":50,"gameOAuthClients":2}}' });
    const owner = await account("owner@example.com");
    ({ key: apiKey, cookie } = owner);
    await api("POST", "organizations/createOrganization", { name: "Acme", slug: "acme" });
    const member = await account("member@example.com");
    memberKey = member.key;
    await verifyEmail(t, "member@example.com");
    const { token } = await api("POST", "organizations/addMember", { organizationSlug: "acme", email: "member@example.com", role: "member" });
    const accepted = await call("POST", "organizations/acceptInvitation", { token }, { key: memberKey });
    memberId = accepted.body.member.userId;
    outsiderKey = (await account("outsider@example.com")).key;
  });
  afterEach(async () => {
    await Promise.all(agents.splice(0).map((agent) => agent.stop()));
  });
  after(async () => {
    await t?.close();
  });
  return {
    t: () => t,
    apiKey: () => apiKey,
    cookie: () => cookie,
    memberKey: () => memberKey,
    memberId: () => memberId,
    outsiderKey: () => outsiderKey,
    call,
    api,
    execute,
    createServer,
    connect,
    echo,
    consoleEvents,
  };
}
