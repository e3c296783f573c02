/** The chat suites' core: acme with its cast, a stand-in model, and a server whose agent records the commands it runs. */
import { ServersService } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { Game, PlayerAuth } from "../../gen/outpost/servers/v1/resources_pb.js";
import { OcelotService } from "../../gen/outpost/ocelot/v1/ocelot_service_pb.js";
import { startAgent, type Agent } from "../../agent/client.ts";
import type { AssistantModelConfig } from "../../core/deps.ts";
import { startTestCore, testConfig, type TestCore } from "../support/core.ts";
import { acmeWithMembers, type AcmeCast } from "../support/fixtures.ts";
import { startModelStub, type ModelStub } from "../support/model-stub.ts";

export interface ChatFixture {
  t: TestCore;
  cast: AcmeCast;
  stub: ModelStub;
  model: AssistantModelConfig;
  serverId: string;
  /** The commands the server's console ran, in order. */
  ran: string[];
  /** Turns acme's console_command family on or off (as its owner). */
  switchCommands(on: boolean): Promise<void>;
  close(): Promise<void>;
}

export async function startChatFixture(): Promise<ChatFixture> {
  const stub = await startModelStub();
  const model = { url: stub.url, model: "stub-model", apiKey: "sk-test", timeoutSeconds: 5 };
  const t = await startTestCore({ ...testConfig, assistantModel: model });
  const cast = await acmeWithMembers(t);
  const created = await t.client(ServersService, { session: cast.owner.token }).createServer({ organizationSlug: "acme", name: "Survival", game: Game.MINECRAFT });
  const ran: string[] = [];
  const agent: Agent = startAgent({
    url: "http://in-process",
    key: created.agentKey,
    game: Game.MINECRAFT,
    playerAuth: PlayerAuth.ONLINE,
    reconnect: false,
    transport: t.core.transport(),
    console: async (command) => {
      ran.push(command);
      return { success: true, output: [`[Server] ran ${command}`] };
    },
  });
  await agent.connected();
  const ocelot = t.client(OcelotService, { session: cast.owner.token });
  const switchCommands = async (on: boolean) => {
    const { config } = await ocelot.getOcelotConfig({ organizationSlug: "acme" });
    const settings = config!.settings!;
    await ocelot.updateOcelotConfig({ organizationSlug: "acme", version: config!.version, settings: { ...settings, tools: { ...settings.tools!, consoleCommand: on } } });
  };
  return {
    t,
    cast,
    stub,
    model,
    serverId: created.server!.id,
    ran,
    switchCommands,
    async close() {
      await agent.stop();
      await t.close();
      await stub.close();
    },
  };
}
