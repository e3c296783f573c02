/**
 * The files suites' setting: a whole Outpost (a plan of 50 servers, a high rate limit: a fuzz makes
 * over a thousand calls in seconds), the organization "acme" with its owner and a member (each
 * with an API key), and servers whose agent is the real `outpost-agent wrap` process around the
 * stand-in server, in a directory of their own beside a canary file, which a test reads and writes
 * directly to check what really happened on disk.
 */
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { startTestOutpost, type TestOutpost } from "../support/outpost.ts";
import type { AgentProcess } from "../support/agent.ts";
import { accountKey, startWrappedServer } from "../support/wrapped-server.ts";
import { verifyEmail } from "../support/fixtures.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- JSON from the HTTP API, read field by field
export type Json = any;

/** Starts the setting in the calling suite's `before` and ends it in its `after`; the helpers use it. */
export function useFilesSetting() {
  let t: TestOutpost;
  let ownerKey: string;
  let memberKey: string;
  let memberId: string;
  const running: AgentProcess[] = [];
  const dirs: string[] = [];

  /** One call of the HTTP API with the owner's key (or `key`): its status and parsed body. */
  const call = async (method: "GET" | "POST", path: string, body?: unknown, key = ownerKey) => {
    const res = await fetch(`${t.baseUrl}/api/http/${path}`, {
      method,
      headers: { "x-api-key": key, ...(body ? { "content-type": "application/json" } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : undefined) as Json };
  };
  /** The same, which must answer 200: its body. */
  const ok = async (method: "GET" | "POST", path: string, body?: unknown, key = ownerKey) => {
    const res = await call(method, path, body, key);
    assert.equal(res.status, 200, `${path}: ${JSON.stringify(res.body)}`);
    return res.body;
  };
  /** A GET of a servers procedure with these query parameters. */
  const get = (procedure: string, params: Record<string, string>, key = ownerKey) => call("GET", `servers/${procedure}?${new URLSearchParams(params)}`, undefined, key);

  /** A server, and `outpost-agent wrap` around the stand-in in a directory holding `files` (with `extra` flags). */
  const wrapped = async (name: string, files: Record<string, string | Buffer>, extra: string[] = []) => {
    const { server, agentKey } = await ok("POST", "servers/createServer", { organizationSlug: "acme", name, game: "minecraft" });
    const started = await startWrappedServer(t.baseUrl, agentKey, files, extra);
    dirs.push(started.base);
    running.push(started.agent);
    return { id: server.id as string, ...started };
  };
  /** Gives the member a grant to the server with these actions and file paths. */
  const grant = (serverId: string, actions: string[], filePaths: string[]) =>
    ok("POST", "organizations/createAccessGrant", { organizationSlug: "acme", userId: memberId, serverId, actions, constraints: { filePaths } });

  before(async () => {
    t = await startTestOutpost({ PLANS: '{"free":{"servers":50,"gameOAuthClients":2}}', RATE_LIMIT_PER_MINUTE: "100000" });
    ownerKey = await accountKey(t.baseUrl, "owner@example.com");
    await ok("POST", "organizations/createOrganization", { name: "Acme", slug: "acme" });
    memberKey = await accountKey(t.baseUrl, "member@example.com");
    await verifyEmail(t, "member@example.com");
    const { token } = await ok("POST", "organizations/addMember", { organizationSlug: "acme", email: "member@example.com", role: "member" });
    memberId = (await ok("POST", "organizations/acceptInvitation", { token }, memberKey)).member.userId;
  });
  after(async () => {
    await Promise.all(running.map((agent) => agent.stop("SIGKILL")));
    await t?.close();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  return {
    outpost: () => t,
    ownerKey: () => ownerKey,
    memberKey: () => memberKey,
    call,
    ok,
    get,
    wrapped,
    grant,
  };
}

/** A refusal as [status, reason], to compare with one assert. */
export const refused = (res: { status: number; body: Json }) => [res.status, res.body?.reason];
