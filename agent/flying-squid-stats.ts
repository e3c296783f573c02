/**
 * How a flying-squid server is doing, for Outpost's charts, sampled every 10 s: TPS counted from
 * its tick loop (the `tick` events within the window, per second), MSPT as the time its tick
 * listeners take (from a listener put before all others to one added after them: the plugins
 * loaded later are not measured), CPU and resident memory of the process it runs in (flying-squid
 * is a library inside someone's program, so the whole process is what there is to measure; its
 * limit the container's or the machine's memory), and,
 * with `files.root`, the bytes under the server's directory every 5 minutes.
 */
import type { StatsReport } from "./client.ts";
import { diskUsage, memoryLimit, repeatSampling } from "./stats-sampler.ts";

/** The part of a flying-squid server the sampler listens to. */
export interface SquidTicks {
  on(event: "tick", listener: () => void): unknown;
  prependListener?(event: "tick", listener: () => void): unknown;
  removeListener?(event: "tick", listener: () => void): unknown;
}

const diskEveryMs = 5 * 60_000;

export function sampleSquid(serv: SquidTicks, o: { everyMs: number; root?: string; report: (sample: StatsReport) => void }): { stop(): void } {
  let ticks = 0;
  let tickMs = 0;
  let tickStart = 0;
  const first = () => void (tickStart = performance.now());
  const last = () => {
    ticks++;
    if (tickStart) tickMs += performance.now() - tickStart;
    tickStart = 0;
  };
  serv.prependListener?.("tick", first);
  serv.on("tick", last);

  const limit = memoryLimit();
  let window = { at: performance.now(), cpu: process.cpuUsage() };
  let diskAt = -Infinity;
  const sample = async () => {
    const now = performance.now();
    const seconds = (now - window.at) / 1000;
    const cpu = process.cpuUsage(window.cpu);
    const report: StatsReport = {
      cpuPercent: ((cpu.user + cpu.system) / 1e6 / seconds) * 100,
      memoryBytes: BigInt(process.memoryUsage.rss()),
      memoryLimitBytes: BigInt(limit),
    };
    if (ticks > 0) {
      report.tps = Math.min(20, ticks / seconds);
      if (serv.prependListener) report.mspt = tickMs / ticks;
    }
    ticks = 0;
    tickMs = 0;
    window = { at: now, cpu: process.cpuUsage() };
    if (o.root && now - diskAt >= diskEveryMs) {
      diskAt = now;
      report.diskBytes = BigInt(await diskUsage(o.root));
    }
    o.report(report);
  };
  const sampling = repeatSampling(sample, o.everyMs);
  return {
    stop() {
      sampling.stop();
      serv.removeListener?.("tick", first);
      serv.removeListener?.("tick", last);
    },
  };
}
