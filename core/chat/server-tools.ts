/**
 * The assistant's server tools: server_stats (how a server has been doing over a range, read as
 * servers/getServerStats reads it, summarised for the model: each metric's average, worst and
 * latest, and at most 30 points to see when it changed) and restart_server (the
 * `server_lifecycle` family: servers/restartServer's own path, with its grant check and use, its
 * activity event and its refusals; a person confirms each restart).
 */
import { judgeServerRow } from "../access.ts";
import { fail } from "../errors.ts";
import { metrics, readSeries, resolutionFor, type MetricName } from "../stats/read.ts";
import { LifecycleAction } from "../../gen/outpost/servers/v1/resources_pb.js";
import { runLifecycle } from "../servers/lifecycle-methods.ts";
import { gameStateName } from "../agents/game-state.ts";
import { serverOf, serverParam, text, type ChatTool } from "./tool-definition.ts";

/** The points the model gets of each metric, at most (a tool's result is cut at 8,000 characters: prompt.ts). */
const maxPoints = 30;
const hourMs = 3_600_000;

/** A time from the model: ISO 8601 with a zone, or none. */
function timeArg(args: Record<string, unknown>, name: string): Date | undefined {
  if (args[name] === undefined || args[name] === null || args[name] === "") return undefined;
  const value = text(args, name, 40);
  const at = new Date(value);
  if (!/(Z|[+-]\d{2}:?\d{2})$/i.test(value) || Number.isNaN(at.getTime()))
    throw fail("invalid_argument", `${name}: an ISO 8601 time with its zone is needed, e.g. 2026-11-29T20:00:00Z`);
  return at;
}

const round = (n: number) => Math.round(n * 100) / 100;

export const serverTools: ChatTool[] = [
  {
    name: "server_stats",
    gateTool: "servers.stats",
    description:
      "How a server has been doing over a time range: players online, TPS (ticks per second, 20 is healthy), MSPT (milliseconds per tick, under 50 keeps 20 TPS), CPU (percent of one core), memory and disk (bytes). Gives each metric's average, worst and latest, and up to 30 points (UTC) to see when it changed. Default: the last hour.",
    parameters: {
      type: "object",
      properties: {
        ...serverParam,
        from: { type: "string", description: "Start, ISO 8601 with zone (default: an hour before `to`)" },
        to: { type: "string", description: "End, ISO 8601 with zone (default: now)" },
      },
    },
    parse: (args, scope) => {
      const from = timeArg(args, "from");
      const to = timeArg(args, "to");
      return {
        serverId: serverOf(args, scope),
        summary: `${from?.toISOString() ?? "an hour before"} to ${to?.toISOString() ?? "now"}`,
        input: { from: from?.toISOString() ?? "", to: to?.toISOString() ?? "" },
      };
    },
    async run(env, call) {
      const now = env.deps.clock.now();
      const address = { serverId: call.serverId!, organizationId: env.access.organization.id };
      const judged = await judgeServerRow(env.db.query, env.caller, address, { action: "view", now, plans: env.deps.config.plans });
      const to = call.input.to ? new Date(String(call.input.to)) : now;
      const from = call.input.from ? new Date(String(call.input.from)) : new Date(to.getTime() - hourMs);
      const wanted = Math.ceil((to.getTime() - from.getTime()) / 1000 / maxPoints);
      const { step, resolution } = resolutionFor(from, to, Math.max(10, wanted), now, env.deps.config.statsRetention, true);
      const series = await readSeries(env.db.query, { serverId: call.serverId!, from, to, step, resolution, metrics });
      const summary = (m: MetricName) => {
        const points = series.get(m) ?? [];
        if (!points.length) return { reported: false };
        const worst = m === "tps" ? Math.min(...points.map((p) => p.worst)) : Math.max(...points.map((p) => p.worst));
        const average = points.reduce((n, p) => n + p.value, 0) / points.length;
        return {
          average: round(average),
          worst: round(worst),
          latest: round(points[points.length - 1].value),
          ...(m !== "disk" && { points: points.slice(-maxPoints).map((p) => [p.at.toISOString().slice(5, 16).replace("T", " "), round(p.value), round(p.worst)]) }),
        };
      };
      return {
        server: String(judged.row.server.name),
        game_state: String(judged.row.server.game_state ?? "unknown"),
        from: from.toISOString(),
        to: to.toISOString(),
        step_seconds: step,
        points_are: "[MM-DD HH:MM UTC, average over the step, worst within it (lowest TPS, else highest)]",
        metrics: Object.fromEntries(metrics.map((m) => [m, summary(m)])),
      };
    },
  },
  {
    name: "restart_server",
    gateTool: "servers.restart",
    description:
      "Restarts a server's game process (it saves and stops, then starts again; players are disconnected). Needs an agent that runs the process (outpost-agent wrap). The user confirms each restart before it happens.",
    parameters: {
      type: "object",
      properties: { ...serverParam, reason: { type: "string", description: "Why, in a few words (kept in the activity log)" } },
      required: ["reason"],
    },
    parse: (args, scope) => {
      const reason = text(args, "reason", 200);
      return { serverId: serverOf(args, scope), summary: `restart: ${reason}`, input: { reason } };
    },
    async run(env, call) {
      const answer = await runLifecycle(
        env.deps,
        LifecycleAction.RESTART,
        { serverId: call.serverId!, reason: String(call.input.reason), organizationId: env.access.organization.id },
        env.ctx,
      );
      return { request_id: answer.requestId, changed: answer.changed, game_state: gameStateName(answer.gameState) ?? "unknown", detail: answer.gameStateDetail };
    },
  },
];
