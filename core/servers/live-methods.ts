/**
 * The ServersService methods about a server's agent at work: the players it reports, the console
 * commands it runs (console-methods.ts) and what became of each, and the live console (console-watch.ts).
 */
import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { GetConsoleCommandResponseSchema, ListPlayersResponseSchema, type ServersService } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { entityManager, requireUser, serverScope } from "../context.ts";
import type { CoreDeps } from "../deps.ts";
import { requireServer } from "../access.ts";
import { onlinePlayerToProto } from "../convert.ts";
import { isOnline } from "../agents/presence.ts";
import { storedPlayers } from "../agents/players.ts";
import { executeConsoleCommand } from "./console-methods.ts";
import { watchConsole } from "./console-watch.ts";
import { consoleCommandToProto, findCommand } from "./console-command-queries.ts";
import { fail } from "../errors.ts";

export function liveMethods(deps: CoreDeps): Pick<ServiceImpl<typeof ServersService>, "executeConsoleCommand" | "getConsoleCommand" | "listPlayers" | "watchConsole"> {
  return {
    executeConsoleCommand(req, ctx) {
      return executeConsoleCommand(deps, req, ctx);
    },
    async getConsoleCommand(req, ctx) {
      const db = deps.statements.db(entityManager(ctx));
      const access = { action: "console_read" as const, now: deps.clock.now(), spend: false, plans: deps.config.plans };
      const { server } = await requireServer(db, requireUser(ctx), req, access, serverScope(ctx));
      const found = await findCommand(db.query, server.id, req.requestId);
      if (!found) throw fail("not_found", "no console command of this server has that request_id (records are kept for 30 days)");
      return create(GetConsoleCommandResponseSchema, { command: consoleCommandToProto(found) });
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
