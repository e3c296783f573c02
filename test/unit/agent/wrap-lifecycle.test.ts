/** Outpost's requests to `outpost-agent wrap` where the loop is between states (agent/wrap-lifecycle.ts), with a fake process. */
import assert from "node:assert/strict";
import { GameState, LifecycleAction } from "../../../gen/outpost/servers/v1/resources_pb.js";
import { createWrapLifecycle, type WrapLifecycleDeps } from "../../../agent/wrap-lifecycle.ts";

function setting(running = true) {
  const did: string[] = [];
  let alive = running;
  let exit!: () => void;
  const exited = new Promise<void>((resolve) => (exit = resolve));
  let last = { state: GameState.RUNNING, detail: "" };
  const deps: WrapLifecycleDeps = {
    server: {
      writeLine: (line) => (did.push(`write ${line}`), alive),
      kill: () => void did.push("kill"),
      running: () => alive,
      exited: () => exited,
    },
    graceSeconds: 30,
    stopper: { requested: () => false, untilRequested: () => new Promise(() => {}) },
    note: () => {},
    report: (state, detail) => void (last = { state, detail }),
    current: () => last,
  };
  const ask = (action: LifecycleAction) => lifecycle.handler(action, { requestId: `r-${action}`, reason: "test" });
  const lifecycle = createWrapLifecycle(deps);
  return { lifecycle, ask, did, end: () => ((alive = false), exit()), spawn: () => void (alive = true), state: () => last };
}

describe("unit: wrap's lifecycle between states", () => {
  it("turns a kill under way into a restart when started, and answers a second kill with no change", async () => {
    const { lifecycle, ask, did, end } = setting();
    const killing = ask(LifecycleAction.KILL);
    assert.equal((await ask(LifecycleAction.KILL)).changed, false, "killed once");
    const started = await ask(LifecycleAction.START);
    assert.deepEqual([started.state, started.detail, started.changed], [GameState.STOPPING, "being killed; to be started again", true]);
    assert.equal((await ask(LifecycleAction.STOP)).changed, true, "a stop now: not started again");
    end();
    assert.deepEqual((await killing).state, GameState.STOPPED);
    assert.deepEqual(did, ["kill"]);
    assert.deepEqual(lifecycle.takeIntent()?.action, "stop");
  });

  it("does to the new process what was asked between a start and its spawn", async () => {
    const { lifecycle, ask, did, spawn } = setting(false);
    const idle = lifecycle.idle();
    const start = ask(LifecycleAction.START);
    // The same tick: the loop has not spawned the process yet.
    const stop = ask(LifecycleAction.STOP);
    assert.equal((await start).state, GameState.STARTING);
    assert.equal((await idle).kind, "start");
    assert.equal((await stop).changed, true);
    did.length = 0;
    spawn();
    lifecycle.started();
    assert.deepEqual(did, ["write stop"], "the new process is stopped, as asked");
    assert.equal(lifecycle.takeIntent()?.action, "stop");
  });
});
