/**
 * The files tools' suite's setting: a whole Outpost with a stand-in model, its owner and a member
 * as scripts (API keys, Connect over /api/rpc), and servers run by the real `outpost-agent wrap`
 * around the stand-in server in a directory of their own, whose files the test reads and writes
 * directly to see what really happened on disk.
 */
import { rmSync } from "node:fs";
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
import type { AgentProcess } from "../support/agent.ts";
import { accountKey, startWrappedServer } from "../support/wrapped-server.ts";
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
  const memberKey = await accountKey(t.baseUrl, "member@example.com");
  await verifyEmail(t, "member@example.com");
  const { token } = await client(OrganizationsService).addMember({ organizationSlug: "acme", email: "member@example.com", role: Role.MEMBER });
  const memberId = (await client(OrganizationsService, memberKey).acceptInvitation({ token })).member!.userId;

  const wrapped = async (name: string, files: Record<string, string | Buffer>): Promise<WrappedServer> => {
    const { server, agentKey } = await client(ServersService).createServer({ organizationSlug: "acme", name, game: Game.MINECRAFT });
    const started = await startWrappedServer(t.baseUrl, agentKey, files);
    dirs.push(started.base);
    running.push(started.agent);
    const root = started.root;
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
