/**
 * The files tools' suite's setting: a whole Outpost with a stand-in model, its owner and a member
 * as scripts (API keys, Connect over /api/rpc), and servers run by the real `outpost-agent wrap`
 * around the stand-in server in a directory of their own, whose files the test reads and writes
 * directly to see what really happened on disk.
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DescService } from "@bufbuild/protobuf";
import { createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { OcelotService } from "../../gen/outpost/ocelot/v1/ocelot_service_pb.js";
import { OrganizationsService } from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { Role } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { ServersService } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { Game } from "../../gen/outpost/servers/v1/resources_pb.js";
import { apiKeyHeader } from "../../contract/credentials.ts";
import { startTestOutpost, type TestOutpost } from "../support/outpost.ts";
import { startAgentProcess, type AgentProcess } from "../support/agent.ts";
import { scriptInOrganization } from "../support/http-api.ts";
import { verifyEmail } from "../support/fixtures.ts";
import { startModelStub, type ModelStub } from "../support/model-stub.ts";

export interface WrappedServer {
  id: string;
  /** The server's directory, as the agent serves it. */
  root: string;
}

export interface FilesChatFixture {
  t: TestOutpost;
  stub: ModelStub;
  ownerKey: string;
  memberKey: string;
  memberId: string;
  /** A Connect client of `service` for the script holding `key`. */
  client<S extends DescService>(service: S, key?: string): Client<S>;
  /** A server whose agent is `outpost-agent wrap` in a new directory holding `files`. */
  wrapped(name: string, files: Record<string, string | Buffer>): Promise<WrappedServer>;
  /** Turns acme's files family on or off (as its owner). */
  switchFiles(on: boolean): Promise<void>;
  close(): Promise<void>;
}

/** Signs up `email` over HTTP and makes an API key with that session. */
async function accountKey(t: TestOutpost, email: string): Promise<string> {
  const origin = "http://localhost:3000";
  const signUp = await fetch(`${t.baseUrl}/sign-up`, {
    method: "POST",
    headers: { "content-type": "application/json", origin },
    body: JSON.stringify({ email, password: "a long password", name: email.split("@")[0] }),
  });
  assert.equal(signUp.status, 201);
  const cookie = signUp.headers.get("set-cookie")!.split(";")[0];
  const created = await fetch(`${t.baseUrl}/api/http/auth/createApiKey`, {
    method: "POST",
    headers: { cookie, origin, "content-type": "application/json" },
    body: JSON.stringify({ name: "tests", expiresInDays: 30 }),
  });
  return ((await created.json()) as { key: string }).key;
}

export async function startFilesChatFixture(): Promise<FilesChatFixture> {
  const stub = await startModelStub();
  const t = await startTestOutpost({ OCELOT_MODEL_URL: stub.url, OCELOT_MODEL: "stub-model", OCELOT_MODEL_TIMEOUT_SECONDS: "5" });
  const running: AgentProcess[] = [];
  const dirs: string[] = [];
  const { key: ownerKey } = await scriptInOrganization(t);
  const client = <S extends DescService>(service: S, key = ownerKey) =>
    createClient(
      service,
      createConnectTransport({ baseUrl: `${t.baseUrl}/api/rpc`, httpVersion: "1.1", interceptors: [(next) => (req) => (req.header.set(apiKeyHeader, key), next(req))] }),
    );
  const memberKey = await accountKey(t, "member@example.com");
  await verifyEmail(t, "member@example.com");
  const { token } = await client(OrganizationsService).addMember({ organizationSlug: "acme", email: "member@example.com", role: Role.MEMBER });
  const memberId = (await client(OrganizationsService, memberKey).acceptInvitation({ token })).member!.userId;

  const wrapped = async (name: string, files: Record<string, string | Buffer>): Promise<WrappedServer> => {
    const { server, agentKey } = await client(ServersService).createServer({ organizationSlug: "acme", name, game: Game.MINECRAFT });
    const root = join(mkdtempSync(join(tmpdir(), "outpost-chat-files-")), "server");
    dirs.push(join(root, ".."));
    mkdirSync(root);
    for (const [path, content] of Object.entries(files)) {
      mkdirSync(join(root, path, ".."), { recursive: true });
      writeFileSync(join(root, path), content);
    }
    const standIn = new URL("../agent/fixtures/stand-in-server.ts", import.meta.url).pathname;
    const args = ["wrap", "--url", t.baseUrl, "--key", agentKey, "--auth", "online", "--", process.execPath, standIn, "--format", "paper"];
    const agent = startAgentProcess(args, {}, root);
    running.push(agent);
    await agent.waitFor(/\[outpost\] connected to Outpost/);
    return { id: server!.id, root };
  };

  const switchFiles = async (on: boolean) => {
    const ocelot = client(OcelotService);
    const { config } = await ocelot.getOcelotConfig({ organizationSlug: "acme" });
    const settings = config!.settings!;
    await ocelot.updateOcelotConfig({ organizationSlug: "acme", version: config!.version, settings: { ...settings, tools: { ...settings.tools!, files: on } } });
  };

  return {
    t,
    stub,
    ownerKey,
    memberKey,
    memberId,
    client,
    wrapped,
    switchFiles,
    async close() {
      await Promise.all(running.map((agent) => agent.stop("SIGKILL")));
      await t.close();
      await stub.close();
      for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    },
  };
}
