import type { CoreDeps } from "../deps.ts";
import type { LoginVerdict } from "../game-oauth/login-verifier.ts";
import { countLoginCodeAttempt } from "../ratelimit/login-code-limits.ts";
import { loginUsage, parseOutpostCommand } from "../../contract/login-command.ts";
import { insecurelyAllowed, signInRefusal } from "./player-trust.ts";
import { recordLoginCodeLockout, recordRefusal, verdictReason } from "./login-refusals.ts";
import { frozenInGame, serverFreeze } from "../servers/frozen.ts";

export interface LoginCommandFacts {
  server: { id: string; organizationId: string; name: string; game: string };
  /** How the server authenticates its players, as its agent's Hello said. */
  playerAuth: string;
  player: { uuid: string; name: string };
  /** SHA-256 of the agent key the stream authenticated with. */
  agentKeyHash: string;
}

type AnswerDeps = Pick<CoreDeps, "rateLimits" | "loginVerifier" | "config" | "logger" | "metrics" | "statements" | "orm" | "activity">;

/**
 * What the verifier is told of a server that signs players in only because the deployment allows
 * insecure game servers, so the sign-in's activity says so; and the log warns each time.
 */
function insecureServer(deps: AnswerDeps, facts: LoginCommandFacts): { insecurePlayerAuth?: string } {
  const mode = insecurelyAllowed(facts.playerAuth, deps.config);
  if (!mode) return {};
  deps.logger.warn(
    { serverId: facts.server.id, playerAuth: mode, playerUuid: facts.player.uuid },
    "a game server that cannot prove who its players are signs one in (ALLOW_INSECURE_GAME_SERVERS=true)",
  );
  return { insecurePlayerAuth: mode };
}

/**
 * Why no one can sign in on this server whatever they type, told in game and recorded: it cannot
 * prove who its players are (core/agents/player-trust.ts), or it is frozen (core/servers/frozen.ts;
 * its agent is sent away at its next heartbeat, but may still be connected to another instance).
 */
async function serverRefusal(deps: AnswerDeps, facts: LoginCommandFacts): Promise<LoginVerdict | undefined> {
  const untrusted = signInRefusal(facts.playerAuth, deps.config);
  if (untrusted) {
    await recordRefusal(deps, facts, "insecure_server", untrusted);
    return { accepted: false, message: untrusted };
  }
  const freeze = await serverFreeze(deps.statements.on(deps.orm.em.fork()), deps.config, facts.server.id);
  if (freeze) {
    const message = frozenInGame(freeze);
    await recordRefusal(deps, facts, "server_frozen", message);
    return { accepted: false, message };
  }
  return undefined;
}

/**
 * Answers an in-game command as typed, checking in this order, each with its own message: the
 * command is `/outpost login <CODE>`, `/outpost confirm` or `/outpost cancel`; the server
 * authenticates its players, or the deployment allows it not to (else any player could claim any
 * account: core/agents/player-trust.ts), and is not frozen; for a code, the player,
 * the server, its organization and all servers are within the wrong-code limits, and the code
 * itself, which the LoginVerifier judges. Only codes count as guesses; a code that claims a
 * sign-in is taken back. Refusals and lockouts go to the activity log (login-refusals.ts).
 */
export async function answerLoginCommand(deps: AnswerDeps, facts: LoginCommandFacts & { text: string }): Promise<LoginVerdict> {
  const command = parseOutpostCommand(facts.text);
  if (!command) return { accepted: false, message: loginUsage };
  if (command.kind !== "login") return answerConfirmCommand(deps, facts, command.kind);
  const refused = await serverRefusal(deps, facts);
  if (refused) return refused;
  const attempt = await countLoginCodeAttempt(deps.rateLimits, facts.server, { game: facts.server.game, uuid: facts.player.uuid });
  if (attempt.refusal) {
    // Answered to the player in game, not thrown: counted here rather than by the error interceptor.
    deps.metrics.rateLimitRefused(attempt.refusedBy ?? "unknown");
    await recordLoginCodeLockout(deps, facts, attempt);
    return { accepted: false, message: attempt.refusal };
  }
  const { id, organizationId, name, game } = facts.server;
  const server = { id, organizationId, name, game };
  const attempted = { server, player: facts.player, code: command.code, agentKeyHash: facts.agentKeyHash, ...insecureServer(deps, facts) };
  const verdict = await deps.loginVerifier.verify(attempted);
  if (verdict.accepted || verdict.confirmation) await attempt.succeeded();
  else await recordRefusal(deps, facts, verdictReason(verdict.message), verdict.message);
  return verdict;
}

/**
 * Answers a player's confirmation or cancellation (typed, or from a plugin's ConfirmCommand). It
 * carries no code, so it is no guess: what it may answer is only the claim this very player made
 * on this very server.
 */
export async function answerConfirmCommand(deps: AnswerDeps, facts: LoginCommandFacts, decision: "confirm" | "cancel"): Promise<LoginVerdict> {
  const refused = await serverRefusal(deps, facts);
  if (refused) return refused;
  const { id, organizationId, name, game } = facts.server;
  const server = { id, organizationId, name, game };
  const insecure = decision === "confirm" ? insecureServer(deps, facts) : {};
  return deps.loginVerifier.answer({ server, player: facts.player, agentKeyHash: facts.agentKeyHash, decision, ...insecure });
}
