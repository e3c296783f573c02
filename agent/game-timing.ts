/**
 * TPS and MSPT of a wrapped Paper (or Spigot, Purpur) server, for Outpost's charts: at most once a
 * minute, while the server runs, the agent asks its console `tps` and then `mspt` (in turn with
 * Outpost's commands, not announced) and reads the answers. Those answer lines are kept out of
 * Outpost's live console; the operator's terminal, which shows the server's output unchanged,
 * still shows them. A server that does not know `tps` (vanilla, Fabric) is not asked again until
 * it is started again; one that knows `tps` but not `mspt` (Spigot) reports TPS alone. Each sample
 * carries the latest figures while they are fresh: Paper's 1-minute averages.
 */
import type { ConsoleHandler } from "./console.ts";
import type { StatsReport } from "./client.ts";

/** How often the server is asked, and how long an answer may take. */
export const timingEveryMs = 60_000;
const answerMs = 2_000;

/** Paper: "TPS from last 1m, 5m, 15m: 20.0, 19.97, *20.0" (a star above 20). */
const tpsLine = /TPS from last 1m, 5m, 15m: \*?(?<tps>\d+(?:\.\d+)?),/;
/** Paper: "Server tick times (avg/min/max) from last 5s, 10s, 1m:", then "◴ 1.2/0.8/3.4, 1.1/0.7/3.5, 1.0/0.6/4.0". */
const msptHeading = /Server tick times \(avg\/min\/max\) from last 5s, 10s, 1m:/;
const msptLine = /(?:\d+(?:\.\d+)?\/){2}\d+(?:\.\d+)?, (?:\d+(?:\.\d+)?\/){2}\d+(?:\.\d+)?, (?<avg>\d+(?:\.\d+)?)\/\d+(?:\.\d+)?\/\d+(?:\.\d+)?\s*$/;
/** What a server that knows no such command answers (vanilla's words, then the command marked). */
const unknownCommand = /Unknown or incomplete command|Unknown command|<--\[HERE\]\s*$/;

/** Whether a line printed while the agent's own command runs is its answer (kept out of the live console). */
export function isTimingAnswer(line: string): boolean {
  return tpsLine.test(line) || msptHeading.test(line) || msptLine.test(line) || unknownCommand.test(line);
}

/** The 1-minute TPS in a `tps` answer. */
export function readTps(lines: readonly string[]): number | undefined {
  for (const line of lines) {
    const found = tpsLine.exec(line);
    if (found) return Number(found.groups!.tps);
  }
  return undefined;
}

/** The 1-minute average milliseconds per tick in an `mspt` answer. */
export function readMspt(lines: readonly string[]): number | undefined {
  const heading = lines.findIndex((line) => msptHeading.test(line));
  if (heading < 0) return undefined;
  for (const line of lines.slice(heading + 1)) {
    const found = msptLine.exec(line);
    if (found) return Number(found.groups!.avg);
  }
  return undefined;
}

export interface GameTiming {
  /** The latest figures while fresh, and asks again when a minute has passed (the answer comes with a later sample). */
  sample(): Pick<StatsReport, "tps" | "mspt">;
}

export function createGameTiming(o: {
  probe: ConsoleHandler;
  /** The server's process group while it runs and takes commands, else undefined. */
  runningGroup: () => number | undefined;
  now?: () => number;
  everyMs?: number;
}): GameTiming {
  const now = o.now ?? (() => performance.now());
  const everyMs = o.everyMs ?? timingEveryMs;
  let asked = -Infinity;
  let busy = false;
  let latest: { tps?: number; mspt?: number; at: number; group: number } | undefined;
  /** The process group that does not know the commands: not asked again. */
  let unknownIn: { group: number; mspt: boolean } | undefined;

  const ask = async (group: number) => {
    const run = async (command: string) => (await o.probe(command, AbortSignal.timeout(answerMs))).output;
    const tpsAnswer = await run("tps");
    const tps = readTps(tpsAnswer);
    if (tps === undefined) {
      unknownIn = { group, mspt: false };
      return;
    }
    const mspt = unknownIn?.group === group && unknownIn.mspt ? undefined : readMspt(await run("mspt"));
    if (mspt === undefined) unknownIn = { group, mspt: true };
    latest = { tps, mspt, at: now(), group };
  };

  return {
    sample() {
      const group = o.runningGroup();
      if (group === undefined) return {};
      const time = now();
      const unknown = unknownIn?.group === group && !unknownIn.mspt;
      if (!busy && !unknown && time - asked >= everyMs) {
        asked = time;
        busy = true;
        void ask(group).finally(() => (busy = false));
      }
      if (!latest || latest.group !== group || time - latest.at > everyMs * 1.5) return {};
      return { tps: latest.tps, ...(latest.mspt !== undefined && { mspt: latest.mspt }) };
    },
  };
}
