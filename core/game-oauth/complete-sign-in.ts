/**
 * Completing a hosted sign-in, once its claimant confirmed in game: one transaction flips the
 * session from pending exactly once (still claimed by this player on this server, in time), upserts
 * the game account (its `sub` stays, its name follows the game: the name the player had when they
 * claimed the sign-in, as the page showed it), issues the authorization code,
 * seals the redirect URL to the browser and records `game_oauth.sign_in`.
 */
import { randomUUID } from "node:crypto";
import type { EntityManager } from "@mikro-orm/postgresql";
import { recordActivity } from "../activity/record.ts";
import { issueSecret, randomBase62 } from "../../contract/secrets.ts";
import { appendQuery } from "../oauth/authorization-request.ts";
import { authorizationCodeTtlMs } from "../oauth/token-engine.ts";
import { insecureServerDetails, type Claimant } from "./login-claims.ts";
import { sealToBrowser } from "./sealed-redirect.ts";

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
    const [done] = await tx.execute<Array<{
      redirect_uri: string; state: string; nonce: string | null; code_challenge: string | null; code_challenge_method: string | null; completion_key: string;
      claimed_player_name: string | null;
    }>>(
      `update hosted_authorizations set status = 'completed', completed_at = ?
        where id = ? and status = 'pending' and expires_at > ? and completion_key is not null
          and claimed_server_id = ? and claimed_player_uuid = ? and claimed_until > ?
        returning redirect_uri, state, nonce, code_challenge, code_challenge_method, completion_key, claimed_player_name`,
      [now, session.id, now, server.id, player.uuid, now],
    );
    if (!done) return false;
    // The name the page showed while the player was confirming, not one sent with the confirmation.
    const playerName = done.claimed_player_name ?? player.name.slice(0, 64);
    const [account] = await tx.execute<Array<{ id: string }>>(
      `insert into game_accounts (id, organization_id, game, account_uuid, sub, name, created_at, updated_at)
       values (?, ?, ?, ?, ?, ?, ?, ?)
       on conflict (organization_id, game, account_uuid) do update set name = excluded.name, updated_at = excluded.updated_at
       returning id`,
      [randomUUID(), server.organizationId, server.game, player.uuid, `gp_${randomBase62(24)}`, playerName, now, now],
    );
    await tx.execute(
      `insert into authorization_codes (id, code_hash, game_oauth_client_id, organization_id, hosted_authorization_id, game_account_id,
         server_id, redirect_uri, nonce, code_challenge, code_challenge_method, auth_time, expires_at, created_at)
       values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [
        randomUUID(), authorizationCode.hash, session.clientUuid, server.organizationId, session.id, account.id, server.id,
        done.redirect_uri, done.nonce, done.code_challenge, done.code_challenge_method, now,
        new Date(now.getTime() + authorizationCodeTtlMs), now,
      ],
      "run",
    );
    const redirectUrl = appendQuery(done.redirect_uri, { code: authorizationCode.value, state: done.state, iss: issuer });
    // The code itself is stored only hashed; the browser's copy is sealed to its binding.
    await tx.execute(`update hosted_authorizations set redirect_url_sealed = ? where id = ?`, [sealToBrowser(done.completion_key, redirectUrl), session.id], "run");
    recordActivity(tx, "agent", {
      organizationId: server.organizationId,
      action: "game_oauth.sign_in",
      targetType: "game_oauth_client",
      targetId: session.clientId,
      serverId: server.id,
      details: {
        clientId: session.clientId, clientName: session.clientName, serverId: server.id, serverName: server.name,
        playerName, playerUuid: player.uuid, confirmedInGame: "true", ...insecureServerDetails(who),
      },
    });
    return true;
  });
}
