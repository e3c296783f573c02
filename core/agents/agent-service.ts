import type { ServiceImpl } from "@connectrpc/connect";
import { AgentService } from "../../gen/outpost/agent/v1/agent_service_pb.js";
import { entityManager, requireAgent } from "../context.ts";
import type { CoreDeps } from "../deps.ts";
import { createMessageCheck } from "../interceptors/validate-interceptor.ts";
import { jobFailureLog } from "../log-throttle.ts";
import { runAgentStream } from "./agent-stream.ts";

/** The game-server agents' service: one long stream per agent (see agent-stream.ts). */
export function createAgentService(deps: CoreDeps): ServiceImpl<typeof AgentService> {
  const check = createMessageCheck();
  const disconnectFailed = jobFailureLog(deps.logger, "recording an agent's disconnect failed");
  return {
    connect(requests, ctx) {
      return runAgentStream(deps, { agent: requireAgent(ctx), em: entityManager(ctx), requests, signal: ctx.signal, check, disconnectFailed });
    },
  };
}
