/**
 * Claims on hosted sign-in sessions. A valid `/outpost login <CODE>` binds the pending session to
 * the player and the server that ran it, for {@link confirmWindowSeconds}: only that player on
 * that server may then confirm it (game-login-verifier.ts) or cancel it, and once the time runs
 * out the claim lapses and the code is free again. Every change is made on the session's locked
 * row, so of two players racing for one code exactly one holds it, and every instance sees the
 * same claim. Activity: `game_oauth.sign_in_claimed`, `game_oauth.sign_in_cancelled` and
 * `game_oauth.sign_in_claim_expired` (a confirmation writes `game_oauth.sign_in`).
 */
import type { EntityManager } from "@mikro-orm/postgresql";
import type { Logger } from "pino";
import type { Orm } from "../db/orm.ts";
import type { Clock } from "../deps.ts";
import { recordActivity } from "../activity/record.ts";
import type { ActivityAction } from "../activity/kinds.ts";
import type { AuthorizationEvents } from "./events.ts";
import { confirmWindowSeconds } from "./login-verifier.ts";
import { inTransaction } from "../db/sql.ts";
import { clearLapsedClaims, lockPendingSession, releaseClaims, setClaim, type ClaimRow } from "./sign-in-queries.ts";

/** The player who ran the command, and where. */
export interface Claimant {
  server: { id: string; organizationId: string; name: string };
  player: { uuid: string; name: string };
  /** The server's player_auth when it cannot prove who its players are and the deployment allows it. */
  insecurePlayerAuth?: string;
}

/** What a sign-in's activity adds when its server could not prove who the player is. */
export function insecureServerDetails(who: Pick<Claimant, "insecurePlayerAuth">): Record<string, string> {
  return who.insecurePlayerAuth ? { playerAuth: who.insecurePlayerAuth, insecureServer: "allowed by ALLOW_INSECURE_GAME_SERVERS" } : {};
}

function recordClaim(em: EntityManager, action: ActivityAction, row: ClaimRow, details: Record<string, string> = {}): void {
  recordActivity(em, "agent", {
    organizationId: row.organization_id,
    action,
    targetType: "game_oauth_client",
    targetId: row.client_id,
    serverId: row.server_id,
    details: {
      clientId: row.client_id,
      clientName: row.client_name,
      serverId: row.server_id ?? "",
      playerName: row.player_name,
      playerUuid: row.player_uuid,
      ...details,
    },
  });
}

export interface ClaimOutcome {
  /** The claimant holds the session now (a new claim, or their own that was already live). */
  claimed: boolean;
  /** When their time to confirm ends. */
  until: Date;
  /** Sessions whose page shows another state now (the claimed one, the claimant's earlier claims). */
  changed: string[];
}

/**
 * Claims the pending session for the claimant until {@link confirmWindowSeconds} from `now`, or
 * until the session expires if that is sooner, unless another player (or the same player on another server) holds a claim on it that has not
 * run out (a claim whose server was deleted holds nothing). The claimant's own live claim stays as
 * it is: the same deadline, no activity row, nothing to publish (re-typing a code cannot flood the
 * log). Their live claims on other sessions on this server are released (a later
 * `/outpost confirm` answers the last code they typed, and only that one).
 */
export async function claimSession(em: EntityManager, sessionId: string, who: Claimant, now: Date): Promise<ClaimOutcome> {
  const window = new Date(now.getTime() + confirmWindowSeconds * 1000);
  return em.fork().transactional(async (tx) => {
    const query = inTransaction(tx);
    const held = await lockPendingSession(query, sessionId, now);
    if (!held) return { claimed: false, until: window, changed: [] };
    const heldUntil = held.claimed_until && new Date(held.claimed_until);
    if (heldUntil && heldUntil > now && held.claimed_server_id !== null) {
      const own = held.claimed_server_id === who.server.id && held.claimed_player_uuid === who.player.uuid;
      return own ? { claimed: true, until: heldUntil, changed: [] } : { claimed: false, until: window, changed: [] };
    }
    // No longer than the sign-in itself lasts.
    const expiresAt = new Date(held.expires_at);
    const until = expiresAt < window ? expiresAt : window;
    const row = await setClaim(query, { sessionId, serverId: who.server.id, playerUuid: who.player.uuid, playerName: who.player.name.slice(0, 64), now, until });
    if (heldUntil && held.claimed_player_uuid) {
      // A claim that ran out (or whose server was deleted) and was not swept yet.
      recordClaim(tx, "game_oauth.sign_in_claim_expired", {
        ...row,
        server_id: held.claimed_server_id,
        player_uuid: held.claimed_player_uuid,
        player_name: held.claimed_player_name ?? "",
      });
    }
    const released = await releaseClaims(query, who.server.id, who.player.uuid, now, sessionId);
    for (const other of released) recordClaim(tx, "game_oauth.sign_in_cancelled", other, { reason: "the player claimed another sign-in" });
    recordClaim(tx, "game_oauth.sign_in_claimed", row, { serverName: who.server.name, confirmBy: until.toISOString(), ...insecureServerDetails(who) });
    return { claimed: true, until, changed: [sessionId, ...released.map((r) => r.id)] };
  });
}

/**
 * `/outpost cancel`: releases the claimant's live claims on the server (normally one), recording
 * `game_oauth.sign_in_cancelled`. Returns their client names and sessions, none when there was none.
 */
export async function cancelClaims(em: EntityManager, who: Claimant, now: Date): Promise<Array<{ id: string; clientName: string }>> {
  return em.fork().transactional(async (tx) => {
    const released = await releaseClaims(inTransaction(tx), who.server.id, who.player.uuid, now);
    for (const row of released) recordClaim(tx, "game_oauth.sign_in_cancelled", row, { reason: "the player cancelled in game" });
    return released.map((r) => ({ id: r.id, clientName: r.client_name }));
  });
}

/**
 * Clears the claims whose time ran out, recording `game_oauth.sign_in_claim_expired` for each, and
 * returns their sessions. Each lapsed claim is cleared once however many instances sweep at once.
 * Readers already treat a lapsed claim as none; this writes the log and frees nothing else.
 */
export async function sweepLapsedClaims(em: EntityManager, now: Date): Promise<string[]> {
  return em.fork().transactional(async (tx) => {
    const lapsed = await clearLapsedClaims(inTransaction(tx), now);
    for (const row of lapsed) recordClaim(tx, "game_oauth.sign_in_claim_expired", row);
    return lapsed.map((r) => r.id);
  });
}

/** How often each serving instance runs {@link sweepLapsedClaims}. */
export const claimSweepEveryMs = 15_000;

/** Runs {@link sweepLapsedClaims} every {@link claimSweepEveryMs}, telling watching pages, until `stop`. */
export function startClaimSweep(deps: { orm: Orm; clock: Clock; logger: Logger; events: AuthorizationEvents }): { stop(): Promise<void> } {
  let sweeping: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    sweeping = sweepLapsedClaims(deps.orm.em, deps.clock.now())
      .then((ids) => Promise.all(ids.map((id) => deps.events.publish(id))))
      .catch((error) => deps.logger.error({ err: error }, "sweeping lapsed sign-in claims failed"));
  }, claimSweepEveryMs).unref();
  return {
    async stop() {
      clearInterval(timer);
      await sweeping;
    },
  };
}
