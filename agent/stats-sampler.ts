/**
 * How the wrapped server is doing, sampled for Outpost's charts (StatsSample) every 10 s: the CPU
 * time and resident memory of its process group (the server and whatever it started), read from
 * Linux's /proc, and every 5 minutes the bytes under its directory. Elsewhere than Linux only the
 * players and the disk are reported. TPS and MSPT come from the server itself (game-timing.ts).
 */
import { readdirSync, readFileSync } from "node:fs";
import { lstat, readdir } from "node:fs/promises";
import { join } from "node:path";
import { totalmem } from "node:os";
import type { StatsReport } from "./client.ts";

/** Linux's clock ticks per second (USER_HZ) and page size on the machines this runs on. */
const ticksPerSecond = 100;
const pageBytes = 4096;
/** The directory is measured this often, and at most this many entries of it. */
const diskEveryMs = 5 * 60_000;
const maxEntries = 200_000;

/** The CPU seconds and resident bytes of every process in group `pgid`; undefined without /proc. */
export function groupUsage(pgid: number): { cpuSeconds: number; memoryBytes: number } | undefined {
  let pids: string[];
  try {
    pids = readdirSync("/proc").filter((name) => /^\d+$/.test(name));
  } catch {
    return undefined;
  }
  let ticks = 0;
  let pages = 0;
  for (const pid of pids) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    } catch {
      continue; // Gone meanwhile.
    }
    // After the command's name, which may hold spaces and parentheses: state ppid pgrp … utime(11) stime(12) … rss(21).
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(fields[2]) !== pgid) continue;
    ticks += Number(fields[11]) + Number(fields[12]);
    pages += Number(fields[21]);
  }
  return { cpuSeconds: ticks / ticksPerSecond, memoryBytes: pages * pageBytes };
}

const units: Record<string, number> = { "": 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4 };

/**
 * The most memory the server may use: the JVM's -Xmx in its command (its heap; the process's
 * resident memory runs somewhat above it), else the cgroup's limit (a container's), else the
 * machine's memory.
 */
export function memoryLimit(command: readonly string[] = []): number {
  for (const arg of command) {
    const xmx = /^-Xmx(\d+)([kKmMgGtT]?)$/.exec(arg);
    if (xmx) return Number(xmx[1]) * units[xmx[2].toLowerCase()];
  }
  try {
    const cgroup = readFileSync("/sys/fs/cgroup/memory.max", "utf8").trim();
    if (/^\d+$/.test(cgroup)) return Math.min(Number(cgroup), totalmem());
  } catch {
    // No cgroup v2 limit to read.
  }
  return totalmem();
}

/** The bytes of the files under `root` (symbolic links not followed), counting at most {@link maxEntries}. */
export async function diskUsage(root: string): Promise<number> {
  let bytes = 0;
  let seen = 0;
  const pending = [root];
  while (pending.length && seen < maxEntries) {
    const dir = pending.pop()!;
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const entry of entries) {
      if (++seen > maxEntries) break;
      const path = join(dir, entry.name);
      if (entry.isDirectory()) pending.push(path);
      else if (entry.isFile()) bytes += (await lstat(path).catch(() => ({ size: 0 }))).size;
    }
  }
  return bytes;
}

/** Samples the running server every `everyMs` and hands each sample to `report`, until `stop`. */
export function startStatsSampler(o: {
  group: () => number | undefined;
  root: string;
  everyMs: number;
  report: (sample: StatsReport) => void;
  /** The game's own figures, where it tells them. */
  timing?: () => Pick<StatsReport, "tps" | "mspt">;
  /** The most memory the server may use ({@link memoryLimit}). */
  memoryLimitBytes?: number;
}): { stop(): void } {
  let last: { pgid: number; cpuSeconds: number; at: number } | undefined;
  let diskAt = 0;
  let disk: number | undefined;
  const sample = async () => {
    const pgid = o.group();
    if (pgid === undefined) return void (last = undefined);
    const now = performance.now();
    if (now - diskAt >= diskEveryMs || diskAt === 0) {
      diskAt = now;
      disk = await diskUsage(o.root);
    } else disk = undefined;
    const usage = groupUsage(pgid);
    const report: StatsReport = { ...o.timing?.(), ...(o.memoryLimitBytes && { memoryLimitBytes: BigInt(o.memoryLimitBytes) }) };
    if (usage) {
      report.memoryBytes = BigInt(usage.memoryBytes);
      if (last && last.pgid === pgid && now > last.at) report.cpuPercent = Math.max(0, ((usage.cpuSeconds - last.cpuSeconds) / ((now - last.at) / 1000)) * 100);
      last = { pgid, cpuSeconds: usage.cpuSeconds, at: now };
    }
    if (disk !== undefined) report.diskBytes = BigInt(disk);
    o.report(report);
  };
  return repeatSampling(sample, o.everyMs);
}

/** Runs `sample` every `everyMs` (unref'd), skipping a turn while the last one still runs, until `stop`. */
export function repeatSampling(sample: () => Promise<void>, everyMs: number): { stop(): void } {
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    void sample().finally(() => (busy = false));
  }, everyMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
