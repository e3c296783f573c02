/**
 * The Game OAuth issuer's LoginVerifier. An in-game `/outpost login <CODE>` claims the hosted
 * sign-in session waiting for that code, if the server may verify it, and asks the player to
 * confirm (login-claims.ts); `/outpost confirm` from that player on that server in time completes
 * it (complete-sign-in.ts), `/outpost cancel` releases it. Each change is published, so the page
 * on whichever instance follows at once.
 */
import type { CoreDeps } from "../deps.ts";
import { isOnline } from "../agents/presence.ts";
import { cancelClaims, claimSession } from "./login-claims.ts";
import { completeSignIn } from "./complete-sign-in.ts";
import { redirectHostOf } from "./hosted-sessions.ts";
import { appNameShown } from "./shown-text.ts";
import { appOfSignInCompletedBy, sessionByLoginCode, sessionClaimedBy, type VerifiedSessionRow } from "./sign-in-queries.ts";
import { cancelledMessage, confirmationMessage, noSignInMessage, nothingToConfirmMessage, type LoginVerdict, type LoginVerifier } from "./login-verifier.ts";
import type { SqlRunner } from "../db/sql.ts";

export type GameLoginVerifierDeps = Pick<CoreDeps, "orm" | "clock" | "config" | "events" | "logger" | "loginCodes" | "metrics" | "statements">;

type SessionRow = VerifiedSessionRow;

/** Whether another player (or this player on another server) holds a claim on the session that has not run out. */
function heldByAnother(session: SessionRow, who: { serverId: string; playerUuid: string }, now: Date): boolean {
  const until = session.claimed_until && new Date(session.claimed_until);
  if (!until || until <= now || session.claimed_server_id === null) return false;
  return session.claimed_server_id !== who.serverId || session.claimed_player_uuid !== who.playerUuid;
}

/** Why this server may not sign anyone in to the session's app now, if it may not. */
function serverProblem(session: SessionRow, now: Date): string | undefined {
  if (session.verifier_policy !== "any_server" && !session.allowed) {
    return `This server is not allowed to sign you in to ${appNameShown(session.client_name)}. Use one of the servers listed on the sign-in page.`;
  }
  const lastSeenAt = session.server_last_seen_at && new Date(session.server_last_seen_at);
  if (!session.server_online || !isOnline({ online: session.server_online, lastSeenAt }, now)) {
    return "This server's connection to Outpost is down, so it cannot sign you in. Try again in a moment.";
  }
  if (!session.key_current) {
    return "This server's agent key was replaced, so it cannot sign you in until its agent reconnects with the new key.";
  }
  return undefined;
}

/** How long after a sign-in completes the same player's confirmation on the same server is answered as done. */
const repeatedConfirmationMs = 30_000;

const signedInMessage = (clientName: string) => `Signed in to ${appNameShown(clientName)}.`;

/**
 * A confirmation with nothing pending to complete: the same confirmation again, moments later (the
 * agent asks again what a dropped connection left unanswered, maybe while another instance was
 * still completing it), is told it went through; otherwise there is nothing to confirm.
 */
async function repeatedConfirmation(query: SqlRunner, serverId: string, playerUuid: string, now: Date): Promise<LoginVerdict> {
  const app = await appOfSignInCompletedBy(query, serverId, playerUuid, new Date(now.getTime() - repeatedConfirmationMs));
  return app === undefined ? { accepted: false, message: nothingToConfirmMessage } : { accepted: true, message: signedInMessage(app) };
}

export function createGameLoginVerifier(deps: GameLoginVerifierDeps): LoginVerifier {
  const publish = (ids: string[]) => Promise.all(ids.map((id) => deps.events.publish(id)));
  return {
    async verify({ server, player, code, agentKeyHash, insecurePlayerAuth }) {
      const now = deps.clock.now();
      const em = deps.orm.em.fork();
      const by = { serverId: server.id, agentKeyHash };
      const session = await sessionByLoginCode(deps.statements.on(em), by, deps.loginCodes.hash(code), now);
      // Another organization's live code reads exactly like an unknown one: a guess learns nothing.
      if (!session || session.organization_id !== server.organizationId) return { accepted: false, message: noSignInMessage };
      // Someone else's claim reads the same, before anything about this server: on a server that
      // could not sign anyone in, a specific message would tell that the code is live.
      if (heldByAnother(session, { serverId: server.id, playerUuid: player.uuid }, now)) return { accepted: false, message: noSignInMessage };
      const problem = serverProblem(session, now);
      if (problem) return { accepted: false, message: problem };
      const claim = await claimSession(em, session.id, { server, player, insecurePlayerAuth }, now);
      // Another player holds it (or it ended meanwhile): as if no sign-in waited for the code.
      if (!claim.claimed) return { accepted: false, message: noSignInMessage };
      await publish(claim.changed);
      // Whole seconds, rounded down: the prompt never promises more time than the claim has.
      const expiresInSeconds = Math.max(1, Math.floor((claim.until.getTime() - now.getTime()) / 1000));
      const confirmation = { appName: appNameShown(session.client_name), redirectHost: redirectHostOf(session.redirect_uri), expiresInSeconds };
      return { accepted: false, message: confirmationMessage(confirmation), confirmation };
    },

    async answer({ server, player, agentKeyHash, decision, insecurePlayerAuth }) {
      const now = deps.clock.now();
      const em = deps.orm.em.fork();
      const who = { server, player, insecurePlayerAuth };
      if (decision === "cancel") {
        const released = await cancelClaims(em, who, now);
        if (released.length === 0) return { accepted: false, message: nothingToConfirmMessage };
        await publish(released.map((r) => r.id));
        return { accepted: false, message: cancelledMessage(appNameShown(released[0].clientName)) };
      }
      const query = deps.statements.on(em);
      const session = await sessionClaimedBy(query, { serverId: server.id, agentKeyHash }, player.uuid, now);
      if (!session || session.organization_id !== server.organizationId) return repeatedConfirmation(query, server.id, player.uuid, now);
      // Checked again: the policy may have changed, the server gone down or its key been replaced.
      const problem = serverProblem(session, now);
      if (problem) return { accepted: false, message: problem };
      const client = { id: session.id, clientUuid: session.client_uuid, clientId: session.client_id, clientName: session.client_name };
      if (!(await completeSignIn(em, client, who, now, deps.config.gameIssuerUrl))) return repeatedConfirmation(query, server.id, player.uuid, now);
      deps.metrics.signInCompleted();
      await publish([session.id]);
      return { accepted: true, message: signedInMessage(session.client_name) };
    },
  };
}
