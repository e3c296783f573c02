/**
 * The ServersService methods about a server's agent at work: the players it reports, the console
 * commands it runs (console-methods.ts) and the live console (console-watch.ts).
 */
import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { ListPlayersResponseSchema, type ServersService } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { entityManager, requireUser, serverScope } from "../context.ts";
import type { CoreDeps } from "../deps.ts";
import { requireServer } from "../access.ts";
import { onlinePlayerToProto } from "../convert.ts";
import { isOnline } from "../agents/presence.ts";
import { storedPlayers } from "../agents/players.ts";
import { executeConsoleCommand } from "./console-methods.ts";
import { watchConsole } from "./console-watch.ts";

export function liveMethods(deps: CoreDeps): Pick<ServiceImpl<typeof ServersService>, "executeConsoleCommand" | "listPlayers" | "watchConsole"> {
  return {
    executeConsoleCommand(req, ctx) {
      return executeConsoleCommand(deps, req, ctx);
    },
    async listPlayers(req, ctx) {
      const em = entityManager(ctx);
      const { server } = await requireServer(
        deps.statements.db(em),
        requireUser(ctx),
        req,
        { action: "view", now: deps.clock.now(), plans: deps.config.plans },
        serverScope(ctx),
      );
      // An offline server has no players, even before the sweep clears those of a dead instance.
      const players = isOnline(server, deps.clock.now()) ? await storedPlayers(deps.statements.on(em), server.id) : [];
      return create(ListPlayersResponseSchema, { players: players.map(onlinePlayerToProto) });
    },
    watchConsole(req, ctx) {
      return watchConsole(deps, req, ctx);
    },
  };
}
