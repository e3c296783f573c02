/**
 * What the activity log learns of in-game sign-ins that were refused: `game_oauth.sign_in_refused`
 * in the server's organization, with the player, the reason and what the player read; and the
 * lockout when a wrong-code limit first refuses (`rate_limit.locked_out`). Refusals are written
 * per server through the activity throttle (core/activity/throttled.ts): typing codes is free, so
 * the log must not grow with each one. Refusals by a limit that already locked the player out
 * write nothing more (the lockout said it).
 */
import { appendThrottled } from "../activity/throttled.ts";
import { recordLockout, type LockoutDeps } from "../activity/lockouts.ts";
import type { LoginCodeAttempt } from "../ratelimit/login-code-limits.ts";
import { noSignInMessage } from "../game-oauth/login-verifier.ts";

export interface RefusedPlayer {
  server: { id: string; organizationId: string };
  player: { uuid: string; name: string };
  playerAuth: string;
}

/** Why a sign-in was refused, as the event's `reason` says it. */
export type RefusalReason = "insecure_server" | "server_frozen" | "no_sign_in_for_code" | "server_refused";

/** The reason for a verifier's refusal: the code opened nothing, or the server may not sign this in. */
export function verdictReason(message: string): RefusalReason {
  return message === noSignInMessage ? "no_sign_in_for_code" : "server_refused";
}

export async function recordRefusal(deps: LockoutDeps, who: RefusedPlayer, reason: RefusalReason, message: string): Promise<void> {
  await appendThrottled(deps, `sign_in_refused:${who.server.id}`, "agent", {
    action: "game_oauth.sign_in_refused",
    organizationId: who.server.organizationId,
    serverId: who.server.id,
    targetType: "server",
    targetId: who.server.id,
    details: { reason, playerName: who.player.name, playerUuid: who.player.uuid, playerAuth: who.playerAuth, message },
  });
}

/** Records the lockout if this attempt caused one; the global level's goes to the platform's log. */
export async function recordLoginCodeLockout(deps: LockoutDeps, who: RefusedPlayer, attempt: LoginCodeAttempt): Promise<void> {
  const locked = attempt.lockedOut;
  if (!locked) return;
  const inOrganization = locked.level !== "global";
  await recordLockout(deps, {
    policy: locked.policy,
    retryAfterSeconds: locked.retryAfterSeconds,
    ...(inOrganization && { organizationId: who.server.organizationId }),
    serverId: who.server.id,
    details: {
      level: locked.level,
      ...(locked.level === "player" && { playerName: who.player.name, playerUuid: who.player.uuid }),
    },
  });
}
