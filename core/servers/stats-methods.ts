/**
 * servers/getServerStats: how a server has been doing, for whoever may see it (as getServer),
 * read at the resolution the range needs (core/stats/read.ts).
 */
import { create } from "@bufbuild/protobuf";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import { GetServerStatsResponseSchema, StatsMetric, type ServersService } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { entityManager, requireUser, serverScope } from "../context.ts";
import type { CoreDeps } from "../deps.ts";
import { judgeServerRow } from "../access.ts";
import { metrics, readSeries, resolutionFor, toColumns, type MetricName } from "../stats/read.ts";

const toEnum: Record<MetricName, StatsMetric> = {
  cpu: StatsMetric.CPU,
  memory: StatsMetric.MEMORY,
  players: StatsMetric.PLAYERS,
  tps: StatsMetric.TPS,
  mspt: StatsMetric.MSPT,
  disk: StatsMetric.DISK,
};

export function statsMethods(deps: Pick<CoreDeps, "clock" | "config" | "statements">): Pick<ServiceImpl<typeof ServersService>, "getServerStats"> {
  return {
    async getServerStats(req, ctx) {
      const db = deps.statements.db(entityManager(ctx));
      const now = deps.clock.now();
      await judgeServerRow(db.query, requireUser(ctx), req, { action: "view", now, plans: deps.config.plans }, serverScope(ctx));
      const from = timestampDate(req.from!);
      const to = timestampDate(req.to!);
      const { step, resolution } = resolutionFor(from, to, req.stepSeconds, now, deps.config.statsRetention);
      const wanted = req.metrics.length ? metrics.filter((m) => req.metrics.includes(toEnum[m])) : metrics;
      const series = await readSeries(db.query, { serverId: req.serverId, from, to, step, resolution, metrics: wanted });
      return create(GetServerStatsResponseSchema, {
        stepSeconds: step,
        resolution,
        series: wanted.map((m) => ({
          metric: toEnum[m],
          points: toColumns(series.get(m) ?? []),
        })),
      });
    },
  };
}
