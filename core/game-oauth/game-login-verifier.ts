/**
 * The Game OAuth issuer's LoginVerifier: an in-game `/outpost login <CODE>` completes the hosted
 * sign-in session waiting for that code, if the server may verify it. Completing is one
 * transaction: the session flips from pending exactly once, the game account is upserted (its
 * `sub` stays, its name follows the game), the authorization code is issued and the activity
 * recorded; then every instance hears of it, so the page redirects at once.
 */
import { randomUUID } from "node:crypto";
import type { CoreDeps } from "../deps.ts";
import { recordActivity } from "../activity/record.ts";
import { isOnline } from "../agents/presence.ts";
import { issueSecret, randomBase62 } from "../../contract/secrets.ts";
import { appendQuery } from "../oauth/authorization-request.ts";
import { authorizationCodeTtlMs } from "../oauth/token-engine.ts";
import { noSignInMessage, type LoginVerifier } from "./login-verifier.ts";
import { sealToBrowser } from "./sealed-redirect.ts";

export type GameLoginVerifierDeps = Pick<CoreDeps, "orm" | "clock" | "config" | "events" | "logger" | "loginCodes">;

interface PendingRow {
  id: string;
  organization_id: string;
  client_uuid: string;
  client_id: string;
  client_name: string;
  verifier_policy: string;
  allowed: boolean;
  server_online: boolean | null;
  server_last_seen_at: Date | null;
  /** The server still holds the key the reporting stream authenticated with. */
  key_current: boolean | null;
}

export function createGameLoginVerifier(deps: GameLoginVerifierDeps): LoginVerifier {
  return {
    async verify({ server, player, code, agentKeyHash }) {
      const now = deps.clock.now();
      const em = deps.orm.em.fork();
      const [session] = await em.execute<PendingRow[]>(
        `select h.id, h.organization_id, c.id as client_uuid, c.client_id, c.name as client_name, c.verifier_policy,
                exists (select 1 from game_oauth_client_servers cs where cs.game_oauth_client_id = c.id and cs.server_id = ?) as allowed,
                s.online as server_online, s.last_seen_at as server_last_seen_at, s.agent_key_hash = ? as key_current
           from hosted_authorizations h
           join game_oauth_clients c on c.id = h.game_oauth_client_id
           left join servers s on s.id = ?
          where h.login_code_hash = ? and h.status = 'pending' and h.expires_at > ?`,
        [server.id, agentKeyHash, server.id, deps.loginCodes.hash(code), now],
      );
      // Another organization's live code reads exactly like an unknown one: a guess learns nothing.
      if (!session || session.organization_id !== server.organizationId) return { accepted: false, message: noSignInMessage };
      if (session.verifier_policy !== "any_server" && !session.allowed) {
        return { accepted: false, message: `This server is not allowed to sign you in to ${session.client_name}. Use one of the servers listed on the sign-in page.` };
      }
      if (!session.server_online || !isOnline({ online: session.server_online, lastSeenAt: session.server_last_seen_at && new Date(session.server_last_seen_at) }, now)) {
        return { accepted: false, message: "This server's connection to Outpost is down, so it cannot sign you in. Try again in a moment." };
      }
      if (!session.key_current) {
        return { accepted: false, message: "This server's agent key was replaced, so it cannot sign you in until its agent reconnects with the new key." };
      }

      const authorizationCode = issueSecret("gameAuthorizationCode");
      const completed = await em.transactional(async (tx) => {
        const [done] = await tx.execute<Array<{
          redirect_uri: string; state: string; nonce: string | null; code_challenge: string | null; code_challenge_method: string | null; completion_key: string;
        }>>(
          `update hosted_authorizations set status = 'completed', completed_at = ?
            where id = ? and status = 'pending' and expires_at > ? and completion_key is not null
            returning redirect_uri, state, nonce, code_challenge, code_challenge_method, completion_key`,
          [now, session.id, now],
        );
        if (!done) return false;
        const [account] = await tx.execute<Array<{ id: string }>>(
          `insert into game_accounts (id, organization_id, game, account_uuid, sub, name, created_at, updated_at)
           values (?, ?, ?, ?, ?, ?, ?, ?)
           on conflict (organization_id, game, account_uuid) do update set name = excluded.name, updated_at = excluded.updated_at
           returning id`,
          [randomUUID(), server.organizationId, server.game, player.uuid, `gp_${randomBase62(24)}`, player.name.slice(0, 64), now, now],
        );
        await tx.execute(
          `insert into authorization_codes (id, code_hash, game_oauth_client_id, organization_id, hosted_authorization_id, game_account_id,
             server_id, redirect_uri, nonce, code_challenge, code_challenge_method, auth_time, expires_at, created_at)
           values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
          [
            randomUUID(), authorizationCode.hash, session.client_uuid, server.organizationId, session.id, account.id, server.id,
            done.redirect_uri, done.nonce, done.code_challenge, done.code_challenge_method, now,
            new Date(now.getTime() + authorizationCodeTtlMs), now,
          ],
          "run",
        );
        const redirectUrl = appendQuery(done.redirect_uri, { code: authorizationCode.value, state: done.state, iss: deps.config.gameIssuerUrl });
        // The code itself is stored only hashed; the browser's copy is sealed to its binding.
        await tx.execute(`update hosted_authorizations set redirect_url_sealed = ? where id = ?`, [sealToBrowser(done.completion_key, redirectUrl), session.id], "run");
        recordActivity(tx, "agent", {
          organizationId: server.organizationId,
          action: "game_oauth.sign_in",
          targetType: "game_oauth_client",
          targetId: session.client_id,
          serverId: server.id,
          details: { clientId: session.client_id, clientName: session.client_name, serverId: server.id, serverName: server.name, playerName: player.name, playerUuid: player.uuid },
        });
        return true;
      });
      if (!completed) return { accepted: false, message: noSignInMessage };
      await deps.events.publish(session.id);
      return { accepted: true, message: `Signed in to ${session.client_name}.` };
    },
  };
}
