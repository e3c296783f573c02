/**
 * How `outpost-agent wrap` stops its server on a signal: Ctrl-C (SIGINT) or SIGTERM writes `stop`,
 * and the server is killed when it has not stopped after the grace period, or when the operator
 * insists with another signal. Not any other signal, though: under `npm run` one Ctrl-C reaches the
 * agent twice (from the terminal and from npm), so the same signal again within a second is taken
 * as the same request, and killing (and losing what the world had not saved) takes a deliberate
 * second one.
 *
 * A hangup (SIGHUP) stops the server only when the agent's stdin is a terminal, the one that hung
 * up. Otherwise the agent was started without one (nohup, systemd, Docker) and is meant to outlive
 * the session: Node.js does not keep the ignored SIGHUP that nohup leaves it, so it is ignored here.
 */
import type { ServerProcess } from "./server-process.ts";

/** How soon the same signal again counts as the first one, repeated. */
export const repeatWindowMs = 1_000;

/** The signals that stop the server, given the agent's stdin. */
export function stopSignals(stdin: { isTTY?: boolean }): NodeJS.Signals[] {
  return stdin.isTTY ? ["SIGINT", "SIGTERM", "SIGHUP"] : ["SIGINT", "SIGTERM"];
}

export interface Stopper {
  /** A stop signal arrived. */
  onSignal(signal: NodeJS.Signals): void;
  /** Whether a signal asked the server to stop. */
  requested(): boolean;
  /**
   * Resolves true when a stop signal arrives (at once if one did), false after `ms` without one
   * (never, without `ms`) or when `cancel` aborts: the wait between a crash and the restart, or
   * while the server is stopped.
   */
  untilRequested(ms?: number, cancel?: AbortSignal): Promise<boolean>;
  /** Cancels the kill after the grace period (the server has exited). */
  dispose(): void;
}

/** The decisions, apart from the process's signals; `now` is a monotonic clock in milliseconds. */
export function createStopper(
  server: Pick<ServerProcess, "running" | "writeLine" | "kill">,
  graceSeconds: number,
  note: (message: string) => void,
  now: () => number = () => performance.now(),
): Stopper {
  let first: { signal: NodeJS.Signals; at: number } | undefined;
  let killTimer: NodeJS.Timeout | undefined;
  const waiters = new Set<() => void>();
  const request = (signal: NodeJS.Signals) => {
    first = { signal, at: now() };
    for (const wake of waiters) wake();
  };
  return {
    onSignal(signal) {
      if (!server.running()) {
        // Between a crash and its restart, or after a crash loop: nothing to stop but the agent.
        if (!first && waiters.size) note(`${signal}: the server is not running; stopping the agent`);
        if (!first) request(signal);
        return; // Otherwise already ending: the agent exits with the server's status.
      }
      if (first) {
        if (signal === first.signal && now() - first.at < repeatWindowMs) {
          return note(`${signal} again within a second: taken as the same one; the server is still stopping`);
        }
        note(`${signal} again: killing the server now`);
        return server.kill();
      }
      request(signal);
      if (!server.writeLine("stop")) return server.kill();
      note(`${signal}: stopping the server (sent "stop"; it is killed if still running in ${graceSeconds} s, or at once on another ${signal} a second or more from now)`);
      killTimer = setTimeout(() => {
        note(`the server did not stop within ${graceSeconds} s: killing it`);
        server.kill();
      }, graceSeconds * 1000);
    },
    requested: () => first !== undefined,
    untilRequested(ms, cancel) {
      if (first) return Promise.resolve(true);
      if (cancel?.aborted) return Promise.resolve(false);
      return new Promise((resolve) => {
        const timer = ms === undefined ? undefined : setTimeout(() => done(false), ms);
        const wake = () => done(true);
        const cancelled = () => done(false);
        const done = (requested: boolean) => {
          clearTimeout(timer);
          waiters.delete(wake);
          cancel?.removeEventListener("abort", cancelled);
          resolve(requested);
        };
        waiters.add(wake);
        cancel?.addEventListener("abort", cancelled, { once: true });
      });
    },
    dispose: () => clearTimeout(killTimer),
  };
}

/** Listens for the stop signals on this process (and for a SIGHUP to ignore, when it is not one). */
export function handleStopSignals(
  server: Pick<ServerProcess, "running" | "writeLine" | "kill">,
  graceSeconds: number,
  note: (message: string) => void,
  onStopping: () => void = () => {},
): Stopper {
  const created = createStopper(server, graceSeconds, note);
  const stopper: Stopper = {
    ...created,
    onSignal(signal) {
      const first = !created.requested() && server.running();
      created.onSignal(signal);
      if (first) onStopping();
    },
  };
  const signals = stopSignals(process.stdin);
  for (const signal of signals) process.on(signal, stopper.onSignal);
  if (!signals.includes("SIGHUP")) {
    process.on("SIGHUP", () => note("SIGHUP ignored: the agent's stdin is no terminal (nohup, systemd, Docker); SIGINT or SIGTERM stops the server"));
  }
  return stopper;
}
