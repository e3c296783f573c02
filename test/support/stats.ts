/** servers/getServerStats as the HTTP API answers it (JSON), read back as points per metric. */

export interface JsonPoint {
  /** Seconds since the epoch. */
  at: number;
  value: number;
  worst: number;
}

interface JsonColumns {
  atSeconds?: number[];
  values?: number[];
  worst?: number[];
}

/** Each metric's points, by the metric's name ("cpu", "tps"…); a metric without any has none. */
export function seriesOf(answer: { series: Array<{ metric: string; points?: JsonColumns }> }): Record<string, JsonPoint[]> {
  return Object.fromEntries(
    answer.series.map((s) => [s.metric, (s.points?.atSeconds ?? []).map((at, i) => ({ at, value: s.points!.values![i], worst: s.points!.worst![i] }))]),
  );
}
