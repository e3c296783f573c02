/**
 * Charts. A chart is a `<figure>` whose data rides in the page as JSON, drawn in the browser by
 * uPlot (served from node_modules as a static asset with assets/charts.js, no build step); without
 * scripts, and for screen readers, the same figure says it in words: a summary in its caption and
 * the points in a data table. Sparklines are small enough to be drawn here, as inline SVG.
 * Times are UTC, as everywhere in the dashboard.
 */
import { html, jsonScript, type Html } from "../html.ts";
import { utcText } from "./format.ts";

/** How a chart's values read: players, percent of one core, bytes, ticks per second, milliseconds, sign-ins. */
export type Unit = "count" | "percent" | "bytes" | "tps" | "ms";

export interface ChartLine {
  label: string;
  values: ReadonlyArray<number | null>;
  /** Drawn lighter (the worst within each step, beside the average). */
  faint?: boolean;
}

export interface Chart {
  /** Unique on the page. */
  id: string;
  title: string;
  unit: Unit;
  /** Each point's time, ms since the epoch. */
  times: readonly number[];
  lines: readonly ChartLine[];
  /** What the chart shows, in a sentence or two: its text alternative with the table. */
  summary: string;
  /** Points are whole UTC days (the table shows dates only). */
  days?: boolean;
  /** The time axis's span, ms since the epoch (else the points'): the whole range asked for. */
  span?: readonly [number, number];
}

/** A value as the chart's axis and table say it. */
export function formatValue(unit: Unit, value: number): string {
  switch (unit) {
    case "percent":
      return `${round(value, value < 10 ? 1 : 0)} %`;
    case "bytes":
      return bytesText(value);
    case "tps":
      return round(value, 1);
    case "ms":
      return `${round(value, 1)} ms`;
    default:
      return round(value, Number.isInteger(value) ? 0 : 1);
  }
}

function round(value: number, digits: number): string {
  return value.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: 0 });
}

function bytesText(value: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let n = value;
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${round(n, n < 10 && i > 0 ? 1 : 0)} ${units[i]}`;
}

function timeText(ms: number, days: boolean): string {
  return days ? new Date(ms).toISOString().slice(0, 10) : utcText(new Date(ms));
}

/** The figure: caption with the summary, the plot uPlot fills, the data table, the data. */
export function chartFigure(c: Chart): Html {
  const empty = c.times.length === 0;
  const cell = (v: number | null | undefined) => (v === null || v === undefined ? "—" : formatValue(c.unit, v));
  const rows = c.times.map(
    (t, i) =>
      html`<tr><th scope="row"><time datetime="${new Date(t).toISOString()}">${timeText(t, c.days ?? false)}</time></th>${c.lines.map((l) => html`<td>${cell(l.values[i])}</td>`)}</tr>`,
  );
  const data = { unit: c.unit, days: c.days ?? false, span: c.span?.map((t) => t / 1000), times: c.times.map((t) => t / 1000), lines: c.lines };
  return html`<figure class="chart" id="${c.id}" data-chart>
<figcaption><h3 class="chart-title">${c.title}</h3><p class="chart-summary">${c.summary}</p></figcaption>
${empty ? "" : html`<div class="chart-plot" aria-hidden="true"></div>`}
${
  empty
    ? ""
    : html`<details class="chart-table"><summary>Data table: ${c.title}</summary>
<div class="table-wrap" role="region" tabindex="0" aria-label="${c.title}, data"><table><caption class="sr-only">${c.title}${c.days ? ", per UTC day" : ", UTC"}</caption><thead><tr><th scope="col">${c.days ? "Day" : "Time"}</th>${c.lines.map((l) => html`<th scope="col">${l.label}</th>`)}</tr></thead><tbody>${rows}</tbody></table></div>
</details>`
}
${empty ? "" : jsonScript("application/json", data)}
</figure>`;
}

/** Average, worst and latest of a series, as a chart's summary says them ("" when there is none). */
export function seriesSummary(unit: Unit, values: ReadonlyArray<number | null>, worst: ReadonlyArray<number | null>, o: { worstWord: string; over: string }): string {
  const known = values.filter((v): v is number => v !== null);
  if (!known.length) return "";
  const bad = worst.filter((v): v is number => v !== null);
  const worstValue = o.worstWord === "lowest" ? Math.min(...bad) : Math.max(...bad);
  const average = known.reduce((a, b) => a + b, 0) / known.length;
  return `Average ${formatValue(unit, average)}, ${o.worstWord} ${formatValue(unit, worstValue)} over ${o.over}; latest ${formatValue(unit, known[known.length - 1])}.`;
}

/** A line of `values` in a small box, with its words for screen readers; "—" when there are none. */
export function sparkline(values: readonly number[], label: string): Html {
  if (values.length < 2) return html`<span class="muted" title="${label}">—</span>`;
  const max = Math.max(1, ...values);
  const w = 100;
  const h = 24;
  const points = values.map((v, i) => `${round2((i / (values.length - 1)) * w)},${round2(h - 1 - (v / max) * (h - 2))}`).join(" ");
  return html`<svg class="sparkline" viewBox="0 0 ${w} ${h}" preserveAspectRatio="none" role="img" aria-label="${label}"><polyline points="${points}" fill="none" stroke="currentColor" stroke-width="1.5" vector-effect="non-scaling-stroke"></polyline></svg>`;
}

const round2 = (n: number) => Math.round(n * 100) / 100;
