import assert from "node:assert/strict";
import { GameState, GameStateChanged_Cause, LifecycleAction, type LifecycleHandler } from "../../agent/client.ts";
import { useConsoleSetting, type Json } from "./console-fixture.ts";

/**
 * servers/startServer, stopServer, restartServer, killServer through the HTTP API against a whole
 * Outpost and the real agent library over h2c, its lifecycle handler a recording one: who may, what
 * reaches the agent, what each refusal answers, and the activity log's who and why. The real
 * `outpost-agent wrap` acting on a process: test/agent/wrap-lifecycle.test.ts.
 */
describe("servers: start, stop, restart, kill", function () {
  this.timeout(60_000);
  const setting = useConsoleSetting();
  const { call, api, createServer, connect } = setting;

  /** A handler that records what it was asked and answers with `state`. */
  const recording = (asked: Array<{ action: LifecycleAction; reason: string }>, state = GameState.STOPPING): LifecycleHandler => {
    return async (action, request) => {
      asked.push({ action, reason: request.reason });
      return { state, detail: `did ${LifecycleAction[action].toLowerCase()}`, changed: true };
    };
  };
  const lifecycle = (action: string, serverId: string, auth: { key?: string; cookie?: string } = { key: setting.apiKey() }, reason?: string) =>
    call("POST", `servers/${action}Server`, { serverId, ...(reason && { reason }) }, auth);
  const events = async (serverId: string, action = "server.lifecycle"): Promise<Json[]> =>
    (await api("GET", `activity/listOrganizationActivity?organizationSlug=acme&serverId=${serverId}&action=${action}`)).events.reverse();

  it("asks the agent, answers with the game's state, and puts who, why and what came of it in the activity log", async () => {
    const server = await createServer("Survival");
    const asked: Array<{ action: LifecycleAction; reason: string }> = [];
    await connect(server.key, { lifecycle: recording(asked) });
    assert.equal((await api("GET", `servers/getServer?serverId=${server.id}`)).server.lifecycleAvailable, true);

    const stopped = await lifecycle("stop", server.id, undefined, "nightly backup");
    assert.equal(stopped.status, 200, JSON.stringify(stopped.body));
    assert.deepEqual(
      { ...stopped.body, requestId: typeof stopped.body.requestId },
      {
        requestId: "string",
        gameState: "stopping",
        gameStateDetail: "did stop",
        changed: true,
      },
    );
    for (const action of ["start", "restart", "kill"]) assert.equal((await lifecycle(action, server.id, { cookie: setting.cookie() })).status, 200);
    assert.deepEqual(asked, [
      { action: LifecycleAction.STOP, reason: "owner@example.com: nightly backup" },
      { action: LifecycleAction.START, reason: "owner@example.com" },
      { action: LifecycleAction.RESTART, reason: "owner@example.com" },
      { action: LifecycleAction.KILL, reason: "owner@example.com" },
    ]);
    const recorded = await events(server.id);
    assert.deepEqual(
      recorded.map((e) => [e.actor.email, e.details.action, e.details.outcome, e.details.state, e.details.reason]),
      [
        ["owner@example.com", "stop", "ok", "stopping", "nightly backup"],
        ["owner@example.com", "start", "ok", "stopping", undefined],
        ["owner@example.com", "restart", "ok", "stopping", undefined],
        ["owner@example.com", "kill", "ok", "stopping", undefined],
      ],
    );
    assert.equal(recorded[0].details.requestId, stopped.body.requestId);
    assert.equal(recorded[0].kind, "player_admin");
  });

  it("says when nothing changed, and when the agent would not act", async () => {
    const server = await createServer("Unchanged");
    let refuse = false;
    await connect(server.key, {
      lifecycle: async () => {
        if (refuse) throw new Error("its operator is stopping the agent");
        return { state: GameState.RUNNING, detail: "", changed: false };
      },
    });
    const same = await lifecycle("start", server.id);
    assert.deepEqual([same.status, same.body.changed, same.body.gameState], [200, false, "running"]);
    refuse = true;
    const refused = await lifecycle("stop", server.id);
    assert.deepEqual([refused.status, refused.body.reason], [409, "agent_refused"]);
    assert.match(refused.body.message, /would not: its operator is stopping the agent/);
    assert.deepEqual(
      (await events(server.id)).map((e) => e.details.outcome),
      ["unchanged", "refused"],
    );
  });

  it("refuses a server whose agent is offline or does not run the process, and one whose agent went away before answering is outcome_unknown", async () => {
    const offline = await createServer("Offline");
    const noAgent = await lifecycle("start", offline.id);
    assert.deepEqual([noAgent.status, noAgent.body.reason], [409, "agent_offline"]);

    const plugin = await createServer("Plugin");
    await connect(plugin.key, { console: setting.echo });
    assert.equal((await api("GET", `servers/getServer?serverId=${plugin.id}`)).server.lifecycleAvailable, false);
    const none = await lifecycle("restart", plugin.id);
    assert.deepEqual([none.status, none.body.reason], [409, "no_lifecycle"]);
    assert.match(none.body.message, /outpost-agent wrap/);

    const hanging = await createServer("Hanging");
    let reached!: () => void;
    const reachedAgent = new Promise<void>((resolve) => (reached = resolve));
    const agent = await connect(hanging.key, { lifecycle: () => (reached(), new Promise(() => {})) });
    const pending = lifecycle("kill", hanging.id);
    await reachedAgent;
    await agent.stop();
    const unknown = await pending;
    assert.deepEqual([unknown.status, unknown.body.reason], [504, "outcome_unknown"]);
    assert.match(unknown.body.message, /gameState/);
    assert.deepEqual(
      [...(await events(offline.id)), ...(await events(plugin.id)), ...(await events(hanging.id))].map((e) => [e.details.action, e.details.outcome]),
      [
        ["start", "offline"],
        ["restart", "no_lifecycle"],
        ["kill", "unknown"],
      ],
    );
  });

  it("needs the lifecycle action of a member's grant, spending a use per call; an outsider finds no server", async () => {
    const server = await createServer("Granted");
    const asked: Array<{ action: LifecycleAction; reason: string }> = [];
    await connect(server.key, { lifecycle: recording(asked) });
    const member = { key: setting.memberKey() };
    const ungranted = await lifecycle("stop", server.id, member);
    assert.deepEqual([ungranted.status, ungranted.body.reason], [403, "permission_denied"]);
    const outsider = await lifecycle("stop", server.id, { key: setting.outsiderKey() });
    assert.equal(outsider.status, 404);

    const grant = { organizationSlug: "acme", userId: setting.memberId(), serverId: server.id };
    await api("POST", "organizations/createAccessGrant", { ...grant, actions: ["console_command"] });
    const withoutAction = await lifecycle("stop", server.id, member);
    assert.equal(withoutAction.status, 403);
    assert.match(withoutAction.body.message, /does not allow lifecycle/);

    await api("POST", "organizations/revokeAccessGrant", grant);
    await api("POST", "organizations/createAccessGrant", { ...grant, actions: ["lifecycle"], constraints: { maxUses: 1 } });
    const once = await lifecycle("restart", server.id, member, "lag");
    assert.equal(once.status, 200, JSON.stringify(once.body));
    const twice = await lifecycle("restart", server.id, member);
    assert.equal(twice.status, 403);
    assert.match(twice.body.message, /used all 1 uses/);
    assert.deepEqual(asked, [{ action: LifecycleAction.RESTART, reason: "member@example.com: lag" }], "only the allowed call reached the agent");
    assert.deepEqual(
      (await events(server.id)).map((e) => [e.actor.email, e.details.outcome]),
      [
        ["member@example.com", "denied"],
        ["member@example.com", "denied"],
        ["member@example.com", "ok"],
        ["member@example.com", "denied"],
      ],
      "the outsider, for whom the server does not exist, left none",
    );
  });

  it("names the lifecycle call behind each change of the game's state, and what else caused one", async () => {
    const server = await createServer("Caused");
    const agent = await connect(server.key, { lifecycle: recording([]) });
    const stopped = await lifecycle("stop", server.id);
    agent.setGameState(GameState.STOPPED, "exit code 0; stopped from Outpost", { cause: GameStateChanged_Cause.OUTPOST, requestId: stopped.body.requestId });
    agent.setGameState(GameState.STARTING, "", { cause: GameStateChanged_Cause.RESTART_POLICY });
    for (let i = 0; ; i++) {
      const changes = await events(server.id, "server.game_state_changed");
      if (changes.length === 2) {
        assert.deepEqual(
          changes.map((e) => [e.details.to, e.details.cause, e.details.requestId]),
          [
            ["stopped", "outpost", stopped.body.requestId],
            ["starting", "restart_policy", undefined],
          ],
        );
        break;
      }
      assert.ok(i < 50, "the agent's changes were recorded");
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  });
});
