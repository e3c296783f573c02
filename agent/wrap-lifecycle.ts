/**
 * Outpost's start, stop, restart and kill for `outpost-agent wrap` (its LifecycleHandler), and the
 * waits of wrap's loop while the server is not running. wrap.ts runs the server; this decides what
 * a request does given where the loop is:
 * - the server runs: stop and restart write `stop` and kill it if it has not ended within the
 *   grace period; kill ends its process group at once; start changes nothing (a stop under way
 *   becomes a restart). Once it has exited, the loop takes what was asked ({@link WrapLifecycle.takeIntent}):
 *   started again for a restart, otherwise left stopped with the agent connected;
 * - the server is not running (stopped from Outpost, after a crash loop, or waiting to be started
 *   again after a crash): start and restart start it now; stop and kill cancel a restart that
 *   waits, and otherwise change nothing.
 * Once the agent's operator stops the agent (Ctrl-C, SIGTERM), every request is refused.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { GameStateChanged_Cause } from "../gen/outpost/agent/v1/agent_service_pb.js";
import { GameState, LifecycleAction } from "../gen/outpost/servers/v1/resources_pb.js";
import type { LifecycleHandler, LifecycleOutcome } from "./lifecycle.ts";
import type { ServerProcess } from "./server-process.ts";
import type { Stopper } from "./wrap-signals.ts";

/** How long a kill waits for the process to end before answering. */
const killAnswerMs = 10_000;

export type Cause = { cause: GameStateChanged_Cause; requestId?: string };

/** What Outpost asked of the running process. */
export interface Intent {
  action: "stop" | "restart" | "kill";
  requestId: string;
}

/** What ended a wait while the server is not running. */
export type Wake = { kind: "signal" } | { kind: "timeout" } | { kind: "start"; requestId: string } | { kind: "stop"; requestId: string };

export interface WrapLifecycleDeps {
  server: Pick<ServerProcess, "writeLine" | "kill" | "running"> & { exited(): Promise<unknown> };
  graceSeconds: number;
  stopper: Pick<Stopper, "requested" | "untilRequested">;
  note(message: string): void;
  /** Reports the game's state (to Outpost, and as the state an unchanged request answers with). */
  report(state: GameState, detail: string, cause: Cause): void;
  /** The state last reported. */
  current(): { state: GameState; detail: string };
}

export interface WrapLifecycle {
  handler: LifecycleHandler;
  /** The loop started the server's process: requests act on it (one asked just before, at once). */
  started(): void;
  /** What Outpost asked of the process that has just exited, if anything (asked once). */
  takeIntent(): Intent | undefined;
  /** Whether Outpost is stopping the process (its console's "Done" is then no "running"). */
  stopping(): boolean;
  /**
   * The server is not running: resolves when the operator stops the agent, when Outpost starts
   * it, and with `ms` (a restart waiting) after `ms` or when Outpost stops it.
   */
  idle(ms?: number): Promise<Wake>;
}

/** The state of a server whose restart after a crash Outpost cancelled. */
export const notStartedAgain = "not started again: stopped from Outpost";

export const outpostCause = (requestId: string): Cause => ({ cause: GameStateChanged_Cause.OUTPOST, requestId });

/** Where the requests stand: what was asked of the running process, and the loop's wait while it is not running. */
interface Requests {
  intent?: Intent;
  killTimer?: NodeJS.Timeout;
  waiting?: { restartWaits: boolean; wake(wake: Wake): void };
}

const unchanged = (deps: WrapLifecycleDeps): LifecycleOutcome => ({ ...deps.current(), changed: false });

function changed(deps: WrapLifecycleDeps, state: GameState, detail: string, requestId: string): LifecycleOutcome {
  deps.report(state, detail, outpostCause(requestId));
  return { state, detail, changed: true };
}

/** Writes `stop` to the running server, and kills it if it is still running after the grace period. */
function sendStop(deps: WrapLifecycleDeps, r: Requests): void {
  const { server, note, graceSeconds } = deps;
  if (!server.writeLine("stop")) return server.kill();
  clearTimeout(r.killTimer);
  r.killTimer = setTimeout(() => {
    note(`the server did not stop within ${graceSeconds} s: killing it`);
    server.kill();
  }, graceSeconds * 1000);
}

/** Stop or restart the running server: `stop`, then a kill after the grace period; one under way (a stop, a kill) changes its mind. */
function stop(deps: WrapLifecycleDeps, r: Requests, action: "stop" | "restart", requestId: string, reason: string): LifecycleOutcome {
  const then = action === "restart" ? "to be started again" : "not to be started again";
  if (r.intent?.action === action) return unchanged(deps);
  const already = r.intent;
  r.intent = { action, requestId };
  if (already) return changed(deps, GameState.STOPPING, `${already.action === "kill" ? "being killed" : "stopping"}; ${then}`, requestId);
  deps.note(`Outpost asks to ${action} the server (${reason}): sent "stop"; it is killed if still running in ${deps.graceSeconds} s`);
  sendStop(deps, r);
  return changed(deps, GameState.STOPPING, `stop sent; killed if still running in ${deps.graceSeconds} s; ${then}`, requestId);
}

/** Kill the running server's process group, and answer once it has ended (or {@link killAnswerMs} passed). */
async function kill(deps: WrapLifecycleDeps, r: Requests, requestId: string, reason: string): Promise<LifecycleOutcome> {
  if (r.intent?.action === "kill") return unchanged(deps);
  r.intent = { action: "kill", requestId };
  deps.note(`Outpost asks to kill the server (${reason}): killing it now`);
  changed(deps, GameState.STOPPING, "killed; ending", requestId);
  deps.server.kill();
  const gaveUp = new AbortController();
  const ended = await Promise.race([deps.server.exited().then(() => true), sleep(killAnswerMs, false, { signal: gaveUp.signal }).catch(() => false)]);
  gaveUp.abort();
  return ended ? { state: GameState.STOPPED, detail: "killed from Outpost", changed: true } : { ...deps.current(), changed: true };
}

/** A request while the server is not running: start it, or cancel a restart that waits. */
function whileWaiting(deps: WrapLifecycleDeps, waiting: NonNullable<Requests["waiting"]>, action: LifecycleAction, requestId: string, reason: string): LifecycleOutcome {
  if (action === LifecycleAction.START || action === LifecycleAction.RESTART) {
    deps.note(`Outpost asks to ${action === LifecycleAction.START ? "start" : "restart"} the server (${reason})`);
    waiting.wake({ kind: "start", requestId });
    return { state: GameState.STARTING, detail: "", changed: true };
  }
  if (!waiting.restartWaits) return unchanged(deps);
  deps.note(`Outpost asks to ${action === LifecycleAction.KILL ? "kill" : "stop"} the server (${reason}): it is not started again`);
  waiting.wake({ kind: "stop", requestId });
  return { state: GameState.STOPPED, detail: notStartedAgain, changed: true };
}

export function createWrapLifecycle(deps: WrapLifecycleDeps): WrapLifecycle {
  const r: Requests = {};
  const handler: LifecycleHandler = async (action, { requestId, reason }) => {
    if (deps.stopper.requested()) throw new Error("its operator is stopping the agent");
    if (r.waiting) return whileWaiting(deps, r.waiting, action, requestId, reason);
    if (action === LifecycleAction.START) {
      if (r.intent?.action !== "stop" && r.intent?.action !== "kill") return unchanged(deps);
      return stop(deps, r, "restart", requestId, reason);
    }
    if (action === LifecycleAction.KILL) return kill(deps, r, requestId, reason);
    return stop(deps, r, action === LifecycleAction.STOP ? "stop" : "restart", requestId, reason);
  };

  return {
    handler,
    started() {
      // Asked between a start and the process (two requests at once): done to the new process.
      if (r.intent?.action === "kill") deps.server.kill();
      else if (r.intent) sendStop(deps, r);
    },
    takeIntent() {
      clearTimeout(r.killTimer);
      const taken = r.intent;
      r.intent = undefined;
      return taken;
    },
    stopping: () => r.intent !== undefined,
    idle(ms) {
      const cancel = new AbortController();
      return new Promise<Wake>((resolve) => {
        const wake = (w: Wake) => {
          if (r.waiting?.wake !== wake) return;
          r.waiting = undefined;
          cancel.abort();
          resolve(w);
        };
        r.waiting = { restartWaits: ms !== undefined, wake };
        void deps.stopper.untilRequested(ms, cancel.signal).then((requested) => wake(requested ? { kind: "signal" } : { kind: "timeout" }));
      });
    },
  };
}
