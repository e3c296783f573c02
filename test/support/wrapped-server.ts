/**
 * What the files suites share: a person signing up as a script would (an API key made with the
 * session), and a game server run by the real `outpost-agent wrap` around the stand-in server in a
 * directory of its own (beside a canary file, outside it), which a test reads and writes directly
 * to see what really happened on disk.
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startAgentProcess, type AgentProcess } from "./agent.ts";

const origin = "http://localhost:3000";
const standIn = fileURLToPath(new URL("../agent/fixtures/stand-in-server.ts", import.meta.url));

/** Signs `email` up at `baseUrl` and makes an API key with the session: the key. */
export async function accountKey(baseUrl: string, email: string): Promise<string> {
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
  return ((await created.json()) as { key: string }).key;
}

export interface WrappedDirectory {
  /** The server's directory, which the agent serves. */
  root: string;
  /** The temporary folder holding `root` and `canary.txt`; the caller removes it. */
  base: string;
  agent: AgentProcess;
}

/**
 * `outpost-agent wrap` (with `extra` flags) for the server whose agent key is `agentKey`, around the
 * stand-in in a new directory holding `files`; resolves once it is connected.
 */
export async function startWrappedServer(baseUrl: string, agentKey: string, files: Record<string, string | Buffer>, extra: string[] = []): Promise<WrappedDirectory> {
  const base = mkdtempSync(join(tmpdir(), "outpost-files-"));
  const root = join(base, "server");
  mkdirSync(root);
  writeFileSync(join(base, "canary.txt"), "outside the server's directory");
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(root, path, ".."), { recursive: true });
    writeFileSync(join(root, path), content);
  }
  const args = ["wrap", "--url", baseUrl, "--key", agentKey, "--auth", "online", ...extra, "--", process.execPath, standIn, "--format", "paper"];
  const agent = startAgentProcess(args, {}, root);
  await agent.waitFor(/\[outpost\] connected to Outpost/);
  return { root, base, agent };
}
