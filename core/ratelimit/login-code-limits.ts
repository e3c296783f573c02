import { hashSecret } from "../../contract/secrets.ts";
import type { RateLimits } from "./limits.ts";
import type { Limiter, RateLimitDecision } from "./limiter.ts";
import type { RateLimitPolicy } from "./policies.ts";

/** What a login-code limit counts: one player, one server, one organization, or everything. */
export type LoginCodeLevel = "player" | "server" | "organization" | "global";

export interface LoginCodeAttempt {
  /** Set when the attempt is over a limit: the message for the player, saying when to retry. */
  refusal: string | undefined;
  /** The refusing limit's policy name, with a refusal. */
  refusedBy?: string;
  /**
   * Set when this very attempt locked a level out (its window's first refusal): which level, for
   * the activity log. Refusals after it in the window leave it unset.
   */
  lockedOut?: { level: LoginCodeLevel; policy: RateLimitPolicy; retryAfterSeconds: number };
  /** The code was right: the attempt is taken back from every count. */
  succeeded(): Promise<void>;
}

function inWords(seconds: number): string {
  const [n, unit] = seconds < 60 ? [seconds, "second"] : [Math.ceil(seconds / 60), "minute"];
  return `${n} ${unit}${n === 1 ? "" : "s"}`;
}

/** The key of {@link RateLimits.loginCodeGlobal}: one count for every server. */
export const globalLoginCodeKey = "all";

interface Level {
  name: LoginCodeLevel;
  limiter: Limiter;
  key: string;
  message: string;
}

const refusalOf = (level: Level, decision: RateLimitDecision) => `${level.message}. Try again in ${inWords(decision.retryAfterSeconds)}.`;

/**
 * Counts an in-game login code against the player (their game account, on any server of the
 * organization), the server, the server's organization and all servers together, one level at a time in that order,
 * and stops at the first that refuses: an attempt counts only against the levels that let it
 * through, and a refused one is taken back from the levels below, so it counts nowhere. Whoever
 * runs an agent can invent players and make servers, but what one player, one server or one
 * organization adds further up is at most its own limit: pausing in-game sign-in for everyone
 * takes many organizations' worth of wrong codes. A level this process already refuses answers
 * from memory, without counting. Counted up front, atomically in the store, so parallel guesses
 * cannot slip past; a right code is taken back, so the limits are on wrong codes.
 */
export async function countLoginCodeAttempt(
  limits: RateLimits,
  server: { id: string; organizationId: string },
  player: { game: string; uuid: string },
): Promise<LoginCodeAttempt> {
  // The player within the organization: anyone can make an organization and report any player's
  // public UUID, which must not lock that player out of another organization's sign-ins.
  const playerKey = hashSecret(`${server.organizationId}:${player.game}:${player.uuid.toLowerCase()}`);
  const levels: Level[] = [
    { name: "player", limiter: limits.loginCodePerPlayer, key: playerKey, message: "You have entered too many wrong codes" },
    { name: "server", limiter: limits.loginCodePerServer, key: server.id, message: "Too many wrong codes have been entered on this server" },
    {
      name: "organization",
      limiter: limits.loginCodePerOrganization,
      key: server.organizationId,
      message: "Too many wrong codes have been entered on this organization's servers",
    },
    { name: "global", limiter: limits.loginCodeGlobal, key: globalLoginCodeKey, message: "Too many wrong codes are being entered; in-game sign-in is paused" },
  ];
  const takeBack = (counted: Level[]) => Promise.all(counted.map(({ limiter, key }) => limiter.refund(key)));
  for (const level of levels) {
    const known = level.limiter.refusing(level.key);
    if (known) return { refusal: refusalOf(level, known), refusedBy: level.limiter.policy.name, async succeeded() {} };
  }
  const counted: Level[] = [];
  for (const level of levels) {
    const decision = await level.limiter.consume(level.key);
    if (!decision.allowed) {
      await takeBack(counted);
      const { policy } = level.limiter;
      const first = decision.consumed === policy.limit + 1;
      return {
        refusal: refusalOf(level, decision),
        refusedBy: policy.name,
        ...(first && { lockedOut: { level: level.name, policy, retryAfterSeconds: decision.retryAfterSeconds } }),
        async succeeded() {},
      };
    }
    counted.push(level);
  }
  return {
    refusal: undefined,
    async succeeded() {
      await takeBack(counted);
    },
  };
}
