/**
 * The game server's own state as an agent that runs it reports it (GameStateChanged): kept on the
 * server's row for getServer and listServers, and each change an activity event by the agent — a
 * crash a warning (`server.game_crashed`), any other change `server.game_state_changed` — with
 * what caused it: the game, the restart policy, the agent's operator, or Outpost (then the request
 * id of the `server.lifecycle` event that says who asked). What the agent sends again on each new
 * connection is no change.
 */
import { GameStateChanged_Cause, type GameStateChanged } from "../../gen/outpost/agent/v1/agent_service_pb.js";
import { GameState } from "../../gen/outpost/servers/v1/resources_pb.js";
import type { CoreDeps } from "../deps.ts";
import { markGameState } from "./agent-queries.ts";

/** The stored names of the states, and back. */
export const gameStates: Record<string, GameState> = {
  starting: GameState.STARTING,
  running: GameState.RUNNING,
  stopping: GameState.STOPPING,
  stopped: GameState.STOPPED,
  crashed: GameState.CRASHED,
};
const namesOf = new Map(Object.entries(gameStates).map(([name, state]) => [state, name]));

/** What brought a change about, as its event says. */
const causes: Partial<Record<GameStateChanged_Cause, string>> = {
  [GameStateChanged_Cause.GAME]: "game",
  [GameStateChanged_Cause.RESTART_POLICY]: "restart_policy",
  [GameStateChanged_Cause.OUTPOST]: "outpost",
  [GameStateChanged_Cause.OPERATOR]: "operator",
};

/** The stored name of a state; undefined for unspecified. */
export const gameStateName = (state: GameState): string | undefined => namesOf.get(state);

type GameStateDeps = Pick<CoreDeps, "activity" | "clock" | "orm" | "statements">;

export async function gameStateChanged(
  deps: GameStateDeps,
  server: { id: string; organizationId: string },
  connectionId: string,
  changed: GameStateChanged,
): Promise<void> {
  const state = namesOf.get(changed.state);
  if (!state) return;
  const query = deps.statements.on(deps.orm.em.fork());
  const marked = await markGameState(query, { serverId: server.id, connectionId, state, detail: changed.detail, now: deps.clock.now() });
  // The same state again (sent after a reconnect, to any instance): nothing changed.
  if (!marked || (marked.previous === state && (marked.previous_detail ?? "") === changed.detail)) return;
  await deps.activity.append("agent", {
    organizationId: server.organizationId,
    action: state === "crashed" ? "server.game_crashed" : "server.game_state_changed",
    targetType: "server",
    targetId: server.id,
    serverId: server.id,
    details: {
      from: marked.previous ?? "unknown",
      to: state,
      ...(changed.detail && { detail: changed.detail }),
      ...(causes[changed.cause] && { cause: causes[changed.cause] }),
      // The lifecycle call whose `server.lifecycle` event says who asked and why.
      ...(changed.cause === GameStateChanged_Cause.OUTPOST && changed.requestId && { requestId: changed.requestId }),
    },
  });
}
