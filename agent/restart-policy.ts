/**
 * What `outpost-agent wrap` does when the server ends by itself (no Ctrl-C, no SIGTERM, no stop
 * from Outpost), by `--restart`:
 * - `on-crash` (the default): a crash (an exit status other than 0) is restarted; a clean exit (an
 *   operator typed `stop` on the console) ends the agent too, as before;
 * - `always`: any end is restarted;
 * - `never`: the agent exits with the server's status.
 * Restarts wait 5 s (`--restart-delay-seconds`), doubling with each end counted in the last ten
 * minutes, up to 5 minutes; the fifth within ten minutes is a crash loop: no more restarts.
 */
export const restartModes = ["on-crash", "always", "never"] as const;
export type RestartMode = (typeof restartModes)[number];

export interface RestartPolicyOptions {
  mode: RestartMode;
  /** The first restart's delay; each further one within the window doubles it. */
  firstDelayMs?: number;
  maxDelayMs?: number;
  /** This many ends within `windowMs` are a crash loop. */
  loopEnds?: number;
  windowMs?: number;
  /** A monotonic clock in milliseconds. */
  now?: () => number;
}

export type RestartDecision = { kind: "exit" } | { kind: "restart"; delayMs: number; ends: number } | { kind: "crash-loop"; ends: number };

export const restartDefaults = { firstDelayMs: 5_000, maxDelayMs: 300_000, loopEnds: 5, windowMs: 600_000 } as const;

export interface RestartPolicy {
  decide(exitStatus: number): RestartDecision;
  /** Forgets the ends counted so far: the server was started again by hand (from Outpost). */
  reset(): void;
}

export function createRestartPolicy(options: RestartPolicyOptions): RestartPolicy {
  const { mode, now = () => performance.now() } = options;
  const { firstDelayMs, maxDelayMs, loopEnds, windowMs } = { ...restartDefaults, ...options };
  let ends: number[] = [];
  return {
    decide(exitStatus) {
      if (mode === "never" || (mode === "on-crash" && exitStatus === 0)) return { kind: "exit" };
      const at = now();
      ends = [...ends.filter((t) => at - t < windowMs), at];
      if (ends.length >= loopEnds) return { kind: "crash-loop", ends: ends.length };
      return { kind: "restart", delayMs: Math.min(firstDelayMs * 2 ** (ends.length - 1), maxDelayMs), ends: ends.length };
    },
    reset: () => void (ends = []),
  };
}
