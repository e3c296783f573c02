/**
 * The files suites' setting: a whole Outpost in this process, the organization "acme" with its
 * owner and a member (an API key each), and `outpost-agent wrap` around the stand-in server in a
 * directory of its own (beside a canary outside it), whose files a suite reads and writes directly
 * to check what really happened on disk. As test/servers/files.test.ts sets itself up.
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startAgentProcess, type AgentProcess } from "../support/agent.ts";
import { verifyEmail } from "../support/fixtures.ts";
import { startTestOutpost, type TestOutpost } from "../support/outpost.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- JSON from the HTTP API, read field by field
export type Json = any;

const origin = "http://localhost:3000";
const standIn = fileURLToPath(new URL("../agent/fixtures/stand-in-server.ts", import.meta.url));

export interface WrappedServer {
  id: string;
  /** The server's directory, which the agent serves. */
  root: string;
  /** The temporary folder holding `root` and `canary.txt`. */
  base: string;
  agent: AgentProcess;
}

/** An answer of the HTTP API: its status and its JSON. */
export interface Answer {
  status: number;
  body: Json;
}

/** Starts the setting in the calling suite's `before` and ends it in its `after`; the helpers use it. */
export function useFilesSetting() {
  let t: TestOutpost;
  const keys = { owner: "", member: "" };
  let memberId = "";
  const running: AgentProcess[] = [];
  const dirs: string[] = [];

  const account = async (email: string) => {
    const signUp = await fetch(`${t.baseUrl}/sign-up`, {
      method: "POST",
      headers: { "content-type": "application/json", origin },
      body: JSON.stringify({ email, password: "a long password", name: email.split("@")[0] }),
    });
    assert.equal(signUp.status, 201);
    const session = signUp.headers.get("set-cookie")!.split(";")[0];
    const created = await fetch(`${t.baseUrl}/api/http/auth/createApiKey`, {
      method: "POST",
      headers: { cookie: session, origin, "content-type": "application/json" },
      body: JSON.stringify({ name: "tests", expiresInDays: 30 }),
    });
    return ((await created.json()) as Json).key as string;
  };
  /** A call to the HTTP API as `key` (the owner's by default). */
  const call = async (method: "GET" | "POST", path: string, body?: unknown, key = keys.owner): Promise<Answer> => {
    const res = await fetch(`${t.baseUrl}/api/http/${path}`, {
      method,
      headers: { "x-api-key": key, ...(body ? { "content-type": "application/json" } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : undefined) as Json };
  };
  /** A call that must succeed; its JSON. */
  const ok = async (method: "GET" | "POST", path: string, body?: unknown, key = keys.owner): Promise<Json> => {
    const res = await call(method, path, body, key);
    assert.equal(res.status, 200, `${path}: ${JSON.stringify(res.body)}`);
    return res.body;
  };
  /** A GET of a ServersService procedure with query parameters. */
  const get = (procedure: string, params: Record<string, string>, key = keys.owner) => call("GET", `servers/${procedure}?${new URLSearchParams(params)}`, undefined, key);
  /** A refusal as [status, reason]. */
  const refused = (res: Answer) => [res.status, res.body?.reason];

  /** A server, and `outpost-agent wrap` around the stand-in in a directory holding `files`. */
  const wrapped = async (name: string, files: Record<string, string | Buffer>, extra: string[] = []): Promise<WrappedServer> => {
    const { server, agentKey } = await ok("POST", "servers/createServer", { organizationSlug: "acme", name, game: "minecraft" });
    const base = mkdtempSync(join(tmpdir(), "outpost-files-"));
    dirs.push(base);
    const root = join(base, "server");
    mkdirSync(root);
    writeFileSync(join(base, "canary.txt"), "outside the server's directory");
    for (const [path, content] of Object.entries(files)) {
      mkdirSync(join(root, path, ".."), { recursive: true });
      writeFileSync(join(root, path), content);
    }
    const args = ["wrap", "--url", t.baseUrl, "--key", agentKey, "--auth", "online", ...extra, "--", process.execPath, standIn, "--format", "paper"];
    const agent = startAgentProcess(args, {}, root);
    running.push(agent);
    await agent.waitFor(/\[outpost\] connected to Outpost/);
    return { id: server.id as string, root, base, agent };
  };

  /** Grants the member `actions` on the server at `filePaths`. */
  const grantMember = (serverId: string, actions: string[], filePaths: string[]) =>
    ok("POST", "organizations/createAccessGrant", { organizationSlug: "acme", userId: memberId, serverId, actions, constraints: { filePaths } });

  before(async () => {
    t = await startTestOutpost({ PLANS: '{"free":{"servers":50,"gameOAuthClients":2}}', RATE_LIMIT_PER_MINUTE: "100000" });
    keys.owner = await account("owner@example.com");
    await ok("POST", "organizations/createOrganization", { name: "Acme", slug: "acme" });
    keys.member = await account("member@example.com");
    await verifyEmail(t, "member@example.com");
    const { token } = await ok("POST", "organizations/addMember", { organizationSlug: "acme", email: "member@example.com", role: "member" });
    memberId = (await ok("POST", "organizations/acceptInvitation", { token }, keys.member)).member.userId;
  });
  after(async () => {
    await Promise.all(running.map((agent) => agent.stop("SIGKILL")));
    await t?.close();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  return { keys, call, ok, get, refused, wrapped, grantMember };
}
