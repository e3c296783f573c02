/**
 * A server's statistics on its page: players, TPS, CPU and memory over the last hour, day, week or
 * month (servers/getServerStats), each as a chart (charts.ts) with its average and its worst per
 * step. The panel keeps itself current: assets/charts.js fetches it again from
 * `/app/o/:slug/servers/:id/stats` (the panel alone) every so often, more often for shorter ranges.
 */
import type { Router } from "@koa/router";
import type { Context } from "koa";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { Organization } from "../../gen/outpost/organizations/v1/resources_pb.js";
import type { Server } from "../../gen/outpost/servers/v1/resources_pb.js";
import { StatsMetric, type StatsSeries } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { html, type Html } from "../html.ts";
import { orgOf, page, type DashboardDeps, type Viewer } from "./context.ts";
import { chartFigure, formatValue, seriesSummary, sparkline, type Chart, type Unit } from "./charts.ts";
import { orgPath } from "./paths.ts";
import { canManage } from "./format.ts";

export const ranges = {
  hour: { seconds: 3600, label: "Hour", over: "the last hour", refreshSeconds: 10 },
  day: { seconds: 86_400, label: "Day", over: "the last day", refreshSeconds: 60 },
  week: { seconds: 7 * 86_400, label: "Week", over: "the last week", refreshSeconds: 300 },
  month: { seconds: 30 * 86_400, label: "Month", over: "the last 30 days", refreshSeconds: 900 },
} as const;
export type RangeName = keyof typeof ranges;

/** The range a request asks for (`?range=`), the hour when none or another word. */
export function rangeOf(ctx: Context): RangeName {
  const asked = ctx.query.range;
  return typeof asked === "string" && Object.hasOwn(ranges, asked) ? (asked as RangeName) : "hour";
}

const charted: ReadonlyArray<{ metric: StatsMetric; title: string; unit: Unit; worst: string; worstWord: string; none: string }> = [
  { metric: StatsMetric.PLAYERS, title: "Players online", unit: "count", worst: "Peak", worstWord: "peak", none: "No players reported in this range." },
  {
    metric: StatsMetric.TPS,
    title: "Ticks per second",
    unit: "tps",
    worst: "Lowest",
    worstWord: "lowest",
    none: "No TPS reported in this range: the agent reads it from Paper's tps command (wrap) or flying-squid's tick loop.",
  },
  { metric: StatsMetric.CPU, title: "CPU (percent of one core)", unit: "percent", worst: "Peak", worstWord: "peak", none: "No CPU figures in this range." },
  { metric: StatsMetric.MEMORY, title: "Memory (resident)", unit: "bytes", worst: "Peak", worstWord: "peak", none: "No memory figures in this range." },
];

function chartOf(series: StatsSeries | undefined, c: (typeof charted)[number], over: string, span: readonly [number, number]): Chart {
  const { atSeconds = [], values = [], worst = [] } = series?.points ?? {};
  return {
    id: `chart-${StatsMetric[c.metric].toLowerCase()}`,
    title: c.title,
    unit: c.unit,
    times: atSeconds.map((s) => s * 1000),
    lines: [
      { label: "Average", values },
      { label: c.worst, values: worst, faint: true },
    ],
    summary: seriesSummary(c.unit, values, worst, { worstWord: c.worstWord, over }) || c.none,
    span,
  };
}

function stepWords(seconds: number): string {
  if (seconds % 3600 === 0) return seconds === 3600 ? "1 hour" : `${seconds / 3600} hours`;
  if (seconds % 60 === 0) return seconds === 60 ? "1 minute" : `${seconds / 60} minutes`;
  return `${seconds} seconds`;
}

/** The panel: the range links and the four charts. */
export async function statsPanel(v: Viewer, org: Organization, serverId: string, name: RangeName): Promise<Html> {
  const range = ranges[name];
  const now = Date.now();
  const res = await v.core.servers.getServerStats({
    serverId,
    // The server must be the URL's organization's, as the page's links say.
    organizationSlug: org.slug,
    from: timestampFromDate(new Date(now - range.seconds * 1000)),
    to: timestampFromDate(new Date(now)),
    metrics: charted.map((c) => c.metric),
  });
  const base = orgPath(org, `/servers/${serverId}`);
  const links = (Object.keys(ranges) as RangeName[]).map(
    (r) => html`<li><a href="${base}?range=${r}#stats"${r === name ? html` aria-current="true"` : ""}>${ranges[r].label}</a></li>`,
  );
  const span = [now - range.seconds * 1000, now] as const;
  const figures = charted.map((c) =>
    chartFigure(
      chartOf(
        res.series.find((x) => x.metric === c.metric),
        c,
        range.over,
        span,
      ),
    ),
  );
  return html`<section class="panel stack" id="stats" aria-labelledby="stats-heading" data-live-stats="${base}/stats?range=${name}" data-refresh-seconds="${range.refreshSeconds}">
<h2 id="stats-heading">How it is doing</h2>
<nav aria-label="Statistics range"><ul class="range-tabs">${links}</ul></nav>
<p class="hint">${range.over[0].toUpperCase()}${range.over.slice(1)}, a point every ${stepWords(res.stepSeconds)}: the average and the worst within it. Times in UTC.</p>
<div class="chart-grid">${figures}</div>
</section>`;
}

/** Players across the organization's servers (those the viewer sees) over the last day, for its overview. */
export async function organizationPlayersPanel(v: Viewer, org: Organization): Promise<Html> {
  const now = Date.now();
  const res = await v.core.organizations.getOrganizationStats({
    organizationSlug: org.slug,
    from: timestampFromDate(new Date(now - 86_400_000)),
    to: timestampFromDate(new Date(now)),
  });
  const { atSeconds = [], values = [], worst = [] } = res.players ?? {};
  const chart = chartFigure({
    id: "chart-organization-players",
    title: "Players online across servers",
    unit: "count",
    times: atSeconds.map((s) => s * 1000),
    lines: [
      { label: "Average", values },
      { label: "Peak (at most)", values: worst, faint: true },
    ],
    summary: seriesSummary("count", values, worst, { worstWord: "peak", over: "the last day" }) || "No server reported players in the last day.",
    span: [now - 86_400_000, now],
  });
  return html`<section class="panel stack" aria-labelledby="players-heading">
<h2 id="players-heading">Players</h2>
<p class="hint">Across ${canManage(org.role) ? "the organization's servers" : "the servers shared with you"}, a point every ${stepWords(res.stepSeconds)}. Times in UTC.</p>
${chart}
</section>`;
}

/** Each server's players over the last day as a sparkline, for the list of servers. */
export async function playerTrends(v: Viewer, org: Organization): Promise<(s: Server) => Html> {
  const now = Date.now();
  const res = await v.core.organizations.getOrganizationStats({
    organizationSlug: org.slug,
    from: timestampFromDate(new Date(now - 86_400_000)),
    to: timestampFromDate(new Date(now)),
    stepSeconds: 1800,
  });
  // Every step of the day, a step without figures drawn as none online.
  const stepMs = res.stepSeconds * 1000;
  const first = Math.floor((now - 86_400_000) / stepMs) * stepMs;
  const steps = Math.floor((now - first) / stepMs) + 1;
  const byServer = new Map(
    res.servers.map((x) => {
      const values = new Array<number>(steps).fill(0);
      x.players?.atSeconds.forEach((at, i) => (values[Math.round((at * 1000 - first) / stepMs)] = x.players!.values[i]));
      return [x.serverId, values];
    }),
  );
  return (s) => {
    const values = byServer.get(s.id) ?? [];
    const words = values.length
      ? `Players of ${s.name} over the last day: peak ${formatValue("count", Math.max(...values))}, latest ${formatValue("count", values[values.length - 1])}`
      : `No players reported by ${s.name} in the last day`;
    return sparkline(values, words);
  };
}

/** The panel alone, for the page's script to swap in. */
async function panelOnly(ctx: Context, v: Viewer): Promise<void> {
  const org = orgOf(v, ctx.params.slug);
  // getServerStats judges the viewer's access to the server itself.
  const panel = await statsPanel(v, org, ctx.params.id, rangeOf(ctx));
  ctx.set("Cache-Control", "no-store");
  ctx.set("X-Content-Type-Options", "nosniff");
  ctx.type = "text/html; charset=utf-8";
  ctx.body = panel.toString();
}

export function serverChartRoutes(router: Router, deps: DashboardDeps): void {
  router.get("/app/o/:slug/servers/:id/stats", page(deps, panelOnly));
}
