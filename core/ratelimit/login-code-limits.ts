import { createHash } from "node:crypto";
import type { Limiter, RateLimits } from "./limits.ts";

export interface LoginCodeAttempt {
  /** Set when the attempt is over a limit: the message for the player, saying when to retry. */
  refusal: string | undefined;
  /** The code was right: the attempt is taken back from every count. */
  succeeded(): Promise<void>;
}

function inWords(seconds: number): string {
  const [n, unit] = seconds < 60 ? [seconds, "second"] : [Math.ceil(seconds / 60), "minute"];
  return `${n} ${unit}${n === 1 ? "" : "s"}`;
}

/** The key of {@link RateLimits.loginCodeGlobal}: one count for every server. */
export const globalLoginCodeKey = "all";

/**
 * Counts an in-game login code against the player (their game account, on any server), the
 * server, the server's organization and all servers together. The player and the server are what
 * the agent says, so only the last two hold against an agent that invents players or an operator
 * who makes servers. Counted up front, atomically in the store, so parallel guesses cannot slip
 * past; a right code is taken back, so the limits are on wrong codes.
 */
export async function countLoginCodeAttempt(
  limits: RateLimits,
  server: { id: string; organizationId: string },
  player: { game: string; uuid: string },
): Promise<LoginCodeAttempt> {
  const playerKey = createHash("sha256").update(`${player.game}:${player.uuid.toLowerCase()}`, "utf8").digest("hex");
  const counts: Array<[Limiter, string, string]> = [
    [limits.loginCodePerPlayer, playerKey, "You have entered too many wrong codes"],
    [limits.loginCodePerServer, server.id, "Too many wrong codes have been entered on this server"],
    [limits.loginCodePerOrganization, server.organizationId, "Too many wrong codes have been entered on this organization's servers"],
    [limits.loginCodeGlobal, globalLoginCodeKey, "Too many wrong codes are being entered; in-game sign-in is paused"],
  ];
  const decisions = await Promise.all(counts.map(([limiter, key]) => limiter.consume(key)));
  const refused = decisions
    .map((decision, i) => ({ decision, message: counts[i][2] }))
    .filter(({ decision }) => !decision.allowed)
    .sort((a, b) => b.decision.retryAfterSeconds - a.decision.retryAfterSeconds)[0];
  return {
    refusal: refused && `${refused.message}. Try again in ${inWords(refused.decision.retryAfterSeconds)}.`,
    async succeeded() {
      await Promise.all(counts.map(([limiter, key]) => limiter.refund(key)));
    },
  };
}
