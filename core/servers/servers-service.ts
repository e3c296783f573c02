import type { ServiceImpl } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import {
  CreateServerResponseSchema,
  DeleteServerResponseSchema,
  GetServerResponseSchema,
  ListServersResponseSchema,
  RegenerateAgentKeyResponseSchema,
  ServersService,
  UpdateServerResponseSchema,
} from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { Server } from "../db/entities.ts";
import { entityManager, requireUser, serverScope } from "../context.ts";
import type { CoreDeps } from "../deps.ts";
import { accessibleServers, requireManager, requireMember, requireServer, requireServerManager, reservePlanCapacity } from "../access.ts";
import { recordActivity } from "../activity/record.ts";
import { gameFromProto, serverToProto } from "../convert.ts";
import { issueSecret } from "../../contract/secrets.ts";
import { fail } from "../errors.ts";
import { liveMethods } from "./live-methods.ts";
import { createDirectory, deleteFile, listFiles, moveFile, readFile, writeFile } from "./file-methods.ts";
import { downloadFile, uploadFile } from "./transfer-methods.ts";
import { fileAccessRequestMethods } from "./file-access-request.ts";
import { pluginMethods } from "./plugin-methods.ts";
import { historyMethods } from "./history-methods.ts";
import { searchMethods } from "./search-methods.ts";
import { lifecycleMethods } from "./lifecycle-methods.ts";
import { scheduleMethods } from "./schedule-methods.ts";
import { statsMethods } from "./stats-methods.ts";
import { accessFreeze, frozenSet, recordFreezeChange } from "./frozen.ts";
import { lockOrganizationPlan } from "./frozen-queries.ts";

type ServersImpl = ServiceImpl<typeof ServersService>;

/**
 * ServersService: the servers as records (this file), what stops their agent keys working, what
 * their agents report and run (live-methods.ts), their files (file-methods.ts, transfer-methods.ts),
 * a file's history (history-methods.ts), search (search-methods.ts), plugins (plugin-methods.ts),
 * members' requests for file access (file-access-request.ts), and starting and stopping the game
 * server's process (lifecycle-methods.ts), and its schedules (schedule-methods.ts).
 */
export function createServersService(deps: CoreDeps): ServersImpl {
  return {
    ...recordMethods(deps),
    ...keyEndingMethods(deps),
    ...liveMethods(deps),
    ...fileMethods(deps),
    ...historyMethods(deps),
    ...searchMethods(deps),
    ...pluginMethods(deps),
    ...fileAccessRequestMethods(deps),
    ...lifecycleMethods(deps),
    ...scheduleMethods(deps),
    ...statsMethods(deps),
  };
}

/** Creating, listing, reading and renaming servers. */
function recordMethods(deps: CoreDeps): Pick<ServersImpl, "createServer" | "listServers" | "getServer" | "updateServer"> {
  const { config, clock } = deps;
  return {
    async createServer(req, ctx) {
      const caller = requireUser(ctx);
      return entityManager(ctx).transactional(async (tx) => {
        const access = await requireManager(tx, caller, req.organizationSlug);
        const organizationId = access.organization.id;
        await reservePlanCapacity(tx, config, organizationId, "servers", () => tx.count(Server, { organization: organizationId }));
        const agentKey = issueSecret("agentKey");
        const server = tx.create(Server, {
          organization: access.organization,
          name: req.name,
          game: gameFromProto(req.game),
          agentKeyHash: agentKey.hash,
          agentKeyPrefix: agentKey.displayPrefix,
        });
        recordActivity(tx, caller, {
          organizationId,
          action: "server.created",
          targetType: "server",
          targetId: server.id,
          serverId: server.id,
          details: { name: server.name, game: server.game },
        });
        await tx.flush();
        return create(CreateServerResponseSchema, { server: serverToProto(server, clock.now(), config), agentKey: agentKey.value });
      });
    },

    async listServers(req, ctx) {
      const caller = requireUser(ctx);
      const em = entityManager(ctx);
      const access = await requireMember(em, caller, req.organizationSlug);
      const servers = await accessibleServers(deps.statements.db(em), caller, access, clock.now());
      const { frozen } = await frozenSet(deps.statements.on(em), config, access.organization.id, access.organization.plan);
      const now = clock.now();
      return create(ListServersResponseSchema, { servers: servers.map((server) => serverToProto(server, now, config, frozen.get(server.id))) });
    },

    async getServer(req, ctx) {
      const access = await requireServer(
        deps.statements.db(entityManager(ctx)),
        requireUser(ctx),
        req,
        { action: "view", now: clock.now(), plans: deps.config.plans },
        serverScope(ctx),
      );
      return create(GetServerResponseSchema, { server: serverToProto(access.server, clock.now(), config, accessFreeze(config, access)) });
    },

    async updateServer(req, ctx) {
      const caller = requireUser(ctx);
      return entityManager(ctx).transactional(async (tx) => {
        const access = await requireServerManager(deps.statements.db(tx), caller, req);
        const { server, organization } = access;
        const previous = server.name;
        server.name = req.name;
        recordActivity(tx, caller, {
          organizationId: organization.id,
          action: "server.renamed",
          targetType: "server",
          targetId: server.id,
          serverId: server.id,
          details: { from: previous, to: req.name },
        });
        return create(UpdateServerResponseSchema, { server: serverToProto(server, clock.now(), config, accessFreeze(config, access)) });
      });
    },
  };
}

/** Deleting a server and regenerating its agent key: the agent's stream ends at once here, at its next heartbeat elsewhere. */
function keyEndingMethods(deps: CoreDeps): Pick<ServersImpl, "deleteServer" | "regenerateAgentKey"> {
  const { config, clock, agents } = deps;
  return {
    async deleteServer(req, ctx) {
      const caller = requireUser(ctx);
      await entityManager(ctx).transactional(async (tx) => {
        const db = deps.statements.db(tx);
        const { server, organization } = await requireServerManager(db, caller, req);
        // Locked, so deletions and plan changes see the organization's servers one after another.
        const plan = await lockOrganizationPlan(db.query, organization.id);
        const before = await frozenSet(db.query, config, organization.id, plan);
        recordActivity(tx, caller, {
          organizationId: organization.id,
          action: "server.deleted",
          targetType: "server",
          targetId: server.id,
          serverId: server.id,
          details: { name: server.name },
        });
        await tx.flush();
        // Its grants go with it (ON DELETE CASCADE).
        await tx.nativeDelete(Server, { id: server.id });
        // The others, ranked again without it (the organization is locked: nothing else changed).
        const others = before.servers.filter((s) => s.id !== server.id).map((s, i) => ({ ...s, rank: i + 1 }));
        const after = await frozenSet(db.query, config, organization.id, plan, others);
        // Deleting an older server unfreezes the oldest frozen one; their agents may connect again.
        recordFreezeChange(tx, caller, { id: organization.id, plan }, config, before, after);
      });
      agents.endServer(req.serverId, fail("unauthenticated", "the server was deleted from Outpost"));
      return create(DeleteServerResponseSchema, {});
    },

    async regenerateAgentKey(req, ctx) {
      const caller = requireUser(ctx);
      const response = await entityManager(ctx).transactional(async (tx) => {
        const access = await requireServerManager(deps.statements.db(tx), caller, req);
        const { server, organization } = access;
        const agentKey = issueSecret("agentKey");
        server.agentKeyHash = agentKey.hash;
        server.agentKeyPrefix = agentKey.displayPrefix;
        recordActivity(tx, caller, {
          organizationId: organization.id,
          action: "server.agent_key_regenerated",
          targetType: "server",
          targetId: server.id,
          serverId: server.id,
          details: { prefix: agentKey.displayPrefix },
        });
        const shown = serverToProto(server, clock.now(), config, accessFreeze(config, access));
        return create(RegenerateAgentKeyResponseSchema, { agentKey: agentKey.value, server: shown });
      });
      // Streams on other instances notice at their next heartbeat.
      agents.endServer(req.serverId, fail("unauthenticated", "the agent key was regenerated; run the agent with the new key"));
      return response;
    },
  };
}

/** The server's files, through its agent (file-methods.ts). */
function fileMethods(
  deps: CoreDeps,
): Pick<ServersImpl, "listFiles" | "readFile" | "writeFile" | "createDirectory" | "moveFile" | "deleteFile" | "downloadFile" | "uploadFile"> {
  return {
    listFiles: (req, ctx) => listFiles(deps, req, ctx),
    readFile: (req, ctx) => readFile(deps, req, ctx),
    writeFile: (req, ctx) => writeFile(deps, req, ctx),
    createDirectory: (req, ctx) => createDirectory(deps, req, ctx),
    moveFile: (req, ctx) => moveFile(deps, req, ctx),
    deleteFile: (req, ctx) => deleteFile(deps, req, ctx),
    downloadFile: (req, ctx) => downloadFile(deps, req, ctx),
    uploadFile: (requests, ctx) => uploadFile(deps, requests, ctx),
  };
}
