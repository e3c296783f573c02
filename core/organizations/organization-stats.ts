/**
 * An organization's statistics, part of OrganizationsService: players online across the servers
 * the caller can see (organizations/getOrganizationStats, read as servers/getServerStats reads
 * one server's), and a Game OAuth client's sign-ins per day (getGameOAuthClientStats, owners and
 * admins, counted by core/game-oauth/game-oauth-queries.ts).
 */
import { create } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  GetGameOAuthClientStatsResponseSchema,
  GetOrganizationStatsResponseSchema,
  type OrganizationsService,
} from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { Server } from "../db/entities.ts";
import { entityManager, requireUser } from "../context.ts";
import type { CoreDeps } from "../deps.ts";
import { requireMember, visibleServerIds } from "../access.ts";
import { readPlayersByServer, resolutionFor, sumSeries, toColumns } from "../stats/read.ts";
import { clientSignInDays } from "../game-oauth/game-oauth-queries.ts";
import { requireClientManager } from "./game-oauth-clients.ts";

type Methods = Pick<ServiceImpl<typeof OrganizationsService>, "getOrganizationStats" | "getGameOAuthClientStats">;

const dayMs = 86_400_000;

export function organizationStatsMethods(deps: Pick<CoreDeps, "clock" | "config" | "statements">): Methods {
  return {
    async getOrganizationStats(req, ctx) {
      const caller = requireUser(ctx);
      const em = entityManager(ctx);
      const db = deps.statements.db(em);
      const now = deps.clock.now();
      const access = await requireMember(em, caller, req.organizationSlug);
      const from = timestampDate(req.from!);
      const to = timestampDate(req.to!);
      const { step, resolution } = resolutionFor(from, to, req.stepSeconds, now, deps.config.statsRetention);
      const visible = await visibleServerIds(db.query, caller, access, now);
      const serverIds = visible ?? (await em.find(Server, { organization: access.organization.id }, { fields: ["id"] })).map((s) => s.id);
      const byServer = await readPlayersByServer(db.query, { serverIds, from, to, step, resolution });
      return create(GetOrganizationStatsResponseSchema, {
        stepSeconds: step,
        resolution,
        players: toColumns(sumSeries(byServer.values())),
        servers: [...byServer].map(([serverId, series]) => ({ serverId, players: toColumns(series) })),
      });
    },

    async getGameOAuthClientStats(req, ctx) {
      const em = entityManager(ctx);
      const { client } = await requireClientManager(em, requireUser(ctx), req.clientId);
      const count = req.days || 30;
      const today = Math.floor(deps.clock.now().getTime() / dayMs) * dayMs;
      const days = Array.from({ length: count }, (_, i) => new Date(today - (count - 1 - i) * dayMs).toISOString().slice(0, 10));
      const counted = new Map((await clientSignInDays(deps.statements.on(em), client.id, days[0], days[count - 1])).map((d) => [d.day, d]));
      return create(GetGameOAuthClientStatsResponseSchema, {
        days: days.map((day) => counted.get(day) ?? { day, started: 0, signedIn: 0, exchanged: 0 }),
      });
    },
  };
}
