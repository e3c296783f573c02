/**
 * Completing a hosted sign-in, once its claimant confirmed in game: one transaction flips the
 * session from pending exactly once (still claimed by this player on this server, in time), upserts
 * the game account (its `sub` stays, its name follows the game: the name the player had when they
 * claimed the sign-in, as the page showed it), issues the authorization code,
 * seals the redirect URL to the browser and records `game_oauth.sign_in`.
 */
import type { EntityManager } from "@mikro-orm/postgresql";
import { recordActivity } from "../activity/record.ts";
import { issueSecret, randomBase62 } from "../../contract/secrets.ts";
import { appendQuery } from "../oauth/authorization-request.ts";
import { authorizationCodeTtlMs } from "../oauth/token-engine.ts";
import { insecureServerDetails, type Claimant } from "./login-claims.ts";
import { sealToBrowser } from "./sealed-redirect.ts";
import { inTransaction } from "../db/sql.ts";
import { completeSession, insertGameCode, storeSealedRedirect, upsertGameAccount } from "./sign-in-queries.ts";

export interface ClaimedSession {
  id: string;
  /** The client's row id, and its public client_id and name. */
  clientUuid: string;
  clientId: string;
  clientName: string;
}

/** Completes the session if `who` still holds its claim at `now`; false otherwise (nothing changed). */
export async function completeSignIn(
  em: EntityManager,
  session: ClaimedSession,
  who: Claimant & { server: { game: string } },
  now: Date,
  issuer: string,
): Promise<boolean> {
  const { server, player } = who;
  const authorizationCode = issueSecret("gameAuthorizationCode");
  return em.fork().transactional(async (tx) => {
    const query = inTransaction(tx);
    const done = await completeSession(query, session.id, server.id, player.uuid, now);
    if (!done) return false;
    // The name the page showed while the player was confirming, not one sent with the confirmation.
    const playerName = done.claimed_player_name ?? player.name.slice(0, 64);
    const gameAccountId = await upsertGameAccount(query, {
      organizationId: server.organizationId,
      game: server.game,
      accountUuid: player.uuid,
      newSub: `gp_${randomBase62(24)}`,
      name: playerName,
      now,
    });
    await insertGameCode(query, {
      codeHash: authorizationCode.hash,
      clientUuid: session.clientUuid,
      organizationId: server.organizationId,
      sessionId: session.id,
      gameAccountId,
      serverId: server.id,
      completed: done,
      expiresAt: new Date(now.getTime() + authorizationCodeTtlMs),
      now,
    });
    const redirectUrl = appendQuery(done.redirect_uri, { code: authorizationCode.value, state: done.state, iss: issuer });
    // The code itself is stored only hashed; the browser's copy is sealed to its binding.
    await storeSealedRedirect(query, session.id, sealToBrowser(done.completion_key, redirectUrl));
    recordActivity(tx, "agent", {
      organizationId: server.organizationId,
      action: "game_oauth.sign_in",
      targetType: "game_oauth_client",
      targetId: session.clientId,
      serverId: server.id,
      details: {
        clientId: session.clientId,
        clientName: session.clientName,
        serverId: server.id,
        serverName: server.name,
        playerName,
        playerUuid: player.uuid,
        confirmedInGame: "true",
        ...insecureServerDetails(who),
      },
    });
    return true;
  });
}
