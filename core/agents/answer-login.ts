import type { CoreDeps } from "../deps.ts";
import type { LoginVerdict } from "../game-oauth/login-verifier.ts";
import { countLoginCodeAttempt } from "../ratelimit/login-code-limits.ts";
import { loginUsage, parseLoginCommand } from "./login-command.ts";

export interface LoginCommandFacts {
  server: { id: string; organizationId: string; name: string; game: string };
  /** How the server authenticates its players, as its agent's Hello said. */
  playerAuth: string;
  player: { uuid: string; name: string };
  /** The command as typed. */
  text: string;
  /** SHA-256 of the agent key the stream authenticated with. */
  agentKeyHash: string;
}

/** The player's answer when the server does not authenticate its players. */
export const unverifiedPlayersMessage = "This server does not verify player accounts, so it cannot sign you in.";

/**
 * Answers an in-game command, checking in this order, each with its own message: the command is
 * `/outpost login <CODE>`; the server authenticates its players (else any player could claim any
 * account); the player and the server are within the wrong-code limits; and the code itself,
 * which the LoginVerifier judges. Only the last two count as guesses.
 */
export async function answerLoginCommand(deps: Pick<CoreDeps, "rateLimits" | "loginVerifier">, facts: LoginCommandFacts): Promise<LoginVerdict> {
  const code = parseLoginCommand(facts.text);
  if (!code) return { accepted: false, message: loginUsage };
  if (facts.playerAuth !== "online") return { accepted: false, message: unverifiedPlayersMessage };
  const attempt = await countLoginCodeAttempt(deps.rateLimits, facts.server, { game: facts.server.game, uuid: facts.player.uuid });
  if (attempt.refusal) return { accepted: false, message: attempt.refusal };
  const { id, organizationId, name, game } = facts.server;
  const verdict = await deps.loginVerifier.verify({ server: { id, organizationId, name, game }, player: facts.player, code, agentKeyHash: facts.agentKeyHash });
  if (verdict.accepted) await attempt.succeeded();
  return verdict;
}
