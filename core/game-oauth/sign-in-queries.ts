/**
 * The in-game half of a hosted sign-in, in SQL: finding the session a command is about, claiming
 * it on its locked row, releasing and sweeping claims, and completing it (the game account, the
 * authorization code, the browser's sealed redirect). The constant pieces shared by two statements
 * stay in this file, beside both.
 */
import { randomUUID } from "node:crypto";
import type { Query } from "../db/statements.ts";

/** A session with what the reporting server may do with it. */
export interface VerifiedSessionRow {
  id: string;
  organization_id: string;
  redirect_uri: string;
  client_uuid: string;
  client_id: string;
  client_name: string;
  verifier_policy: string;
  allowed: boolean;
  server_online: boolean | null;
  server_last_seen_at: Date | null;
  /** The server still holds the key the reporting stream authenticated with. */
  key_current: boolean | null;
  /** The session's claim, if any (it may have run out, or its server been deleted). */
  claimed_server_id: string | null;
  claimed_player_uuid: string | null;
  claimed_until: Date | null;
}

/** The reporting server: its id and the hash of the key its stream authenticated with. */
export interface Reporter {
  serverId: string;
  agentKeyHash: string;
}

/**
 * A session joined to its client and to the reporting server; the `where` that follows takes the
 * parameters after the first three (server id, agent key hash, server id).
 */
const verifiedSession = `select h.id, h.organization_id, h.redirect_uri, c.id as client_uuid, c.client_id, c.name as client_name, c.verifier_policy,
         h.claimed_server_id, h.claimed_player_uuid, h.claimed_until,
         exists (select 1 from game_oauth_client_servers cs where cs.game_oauth_client_id = c.id and cs.server_id = ?) as allowed,
         s.online as server_online, s.last_seen_at as server_last_seen_at, s.agent_key_hash = ? as key_current
    from hosted_authorizations h
    join game_oauth_clients c on c.id = h.game_oauth_client_id
    left join servers s on s.id = ?`;

/** The pending, unexpired session waiting for this login code. */
export async function sessionByLoginCode(query: Query, by: Reporter, loginCodeHash: string, now: Date): Promise<VerifiedSessionRow | undefined> {
  const [row] = await query<VerifiedSessionRow>(
    `${verifiedSession}
      where h.login_code_hash = ? and h.status = 'pending' and h.expires_at > ?`,
    [by.serverId, by.agentKeyHash, by.serverId, loginCodeHash, now],
  );
  return row;
}

/** The pending session the player claimed last on the reporting server, while the claim lasts. */
export async function sessionClaimedBy(query: Query, by: Reporter, playerUuid: string, now: Date): Promise<VerifiedSessionRow | undefined> {
  const [row] = await query<VerifiedSessionRow>(
    `${verifiedSession}
      where h.claimed_server_id = ? and h.claimed_player_uuid = ? and h.status = 'pending' and h.claimed_until > ? and h.expires_at > ?
      order by h.claimed_at desc limit 1`,
    [by.serverId, by.agentKeyHash, by.serverId, by.serverId, playerUuid, now, now],
  );
  return row;
}

/**
 * The app of a sign-in this player completed on this server since `since`, if any: a confirmation
 * asked again (its first answer lost with its connection) is told it went through.
 */
export async function appOfSignInCompletedBy(query: Query, serverId: string, playerUuid: string, since: Date): Promise<string | undefined> {
  const [row] = await query<{ client_name: string }>(
    `select c.name as client_name from hosted_authorizations h join game_oauth_clients c on c.id = h.game_oauth_client_id
      where h.claimed_server_id = ? and h.claimed_player_uuid = ? and h.status = 'completed' and h.completed_at > ?
      order by h.completed_at desc limit 1`,
    [serverId, playerUuid, since],
  );
  return row?.client_name;
}

/** A session's claim as the activity log tells it. */
export interface ClaimRow {
  id: string;
  organization_id: string;
  client_id: string;
  client_name: string;
  server_id: string | null;
  player_uuid: string;
  player_name: string;
}

/** The session's claim before a new one. */
export interface HeldRow {
  claimed_server_id: string | null;
  claimed_player_uuid: string | null;
  claimed_player_name: string | null;
  claimed_until: Date | null;
  expires_at: Date;
}

/** Locks the pending, unexpired session's row (in a transaction) and reads its claim. */
export async function lockPendingSession(query: Query, sessionId: string, now: Date): Promise<HeldRow | undefined> {
  const [row] = await query<HeldRow>(
    `select claimed_server_id, claimed_player_uuid, claimed_player_name, claimed_until, expires_at from hosted_authorizations
      where id = ? and status = 'pending' and expires_at > ? for update`,
    [sessionId, now],
  );
  return row;
}

export interface NewClaim {
  sessionId: string;
  serverId: string;
  playerUuid: string;
  playerName: string;
  now: Date;
  until: Date;
}

export async function setClaim(query: Query, c: NewClaim): Promise<ClaimRow> {
  const [row] = await query<ClaimRow>(
    `update hosted_authorizations h
        set claimed_server_id = ?, claimed_player_uuid = ?, claimed_player_name = ?, claimed_at = ?, claimed_until = ?
       from game_oauth_clients c
      where h.id = ? and c.id = h.game_oauth_client_id
     returning h.id, h.organization_id, c.client_id, c.name as client_name, h.claimed_server_id as server_id,
               h.claimed_player_uuid as player_uuid, h.claimed_player_name as player_name`,
    [c.serverId, c.playerUuid, c.playerName, c.now, c.until, c.sessionId],
  );
  return row;
}

const nilUuid = "00000000-0000-0000-0000-000000000000";

/** Clears the claims of the sessions in `old` (a CTE), returning each claim as it was. */
const clearOldClaims = `update hosted_authorizations h
        set claimed_server_id = null, claimed_player_uuid = null, claimed_player_name = null, claimed_at = null, claimed_until = null
       from old, game_oauth_clients c
      where h.id = old.id and c.id = h.game_oauth_client_id
     returning h.id, h.organization_id, c.client_id, c.name as client_name, old.claimed_server_id as server_id,
               old.claimed_player_uuid as player_uuid, old.claimed_player_name as player_name`;

/** Clears the player's live claims on the server (but the session `except`); returns them as they were. */
export function releaseClaims(query: Query, serverId: string, playerUuid: string, now: Date, except?: string): Promise<ClaimRow[]> {
  return query<ClaimRow>(
    `with old as (
       select h.id, h.claimed_server_id, h.claimed_player_uuid, h.claimed_player_name from hosted_authorizations h
        where h.claimed_server_id = ? and h.claimed_player_uuid = ? and h.status = 'pending' and h.claimed_until > ?
          and h.id <> ?
        for update)
     ${clearOldClaims}`,
    [serverId, playerUuid, now, except ?? nilUuid],
  );
}

/** Clears the claims that ran out by `now` (rows another instance holds are left to it); returns them as they were. */
export function clearLapsedClaims(query: Query, now: Date): Promise<ClaimRow[]> {
  return query<ClaimRow>(
    `with old as (
       select h.id, h.claimed_server_id, h.claimed_player_uuid, h.claimed_player_name from hosted_authorizations h
        where h.status = 'pending' and h.claimed_until <= ? for update skip locked)
     ${clearOldClaims}`,
    [now],
  );
}

/** What a completed session hands on to its code. */
export interface CompletedRow {
  redirect_uri: string;
  state: string;
  nonce: string | null;
  code_challenge: string | null;
  code_challenge_method: string | null;
  completion_key: string;
  claimed_player_name: string | null;
}

/** Completes the session if it is pending, in time and claimed by this player on this server. */
export async function completeSession(query: Query, sessionId: string, serverId: string, playerUuid: string, now: Date): Promise<CompletedRow | undefined> {
  const [row] = await query<CompletedRow>(
    `update hosted_authorizations set status = 'completed', completed_at = ?
      where id = ? and status = 'pending' and expires_at > ? and completion_key is not null
        and claimed_server_id = ? and claimed_player_uuid = ? and claimed_until > ?
      returning redirect_uri, state, nonce, code_challenge, code_challenge_method, completion_key, claimed_player_name`,
    [now, sessionId, now, serverId, playerUuid, now],
  );
  return row;
}

export interface GameAccountFacts {
  organizationId: string;
  game: string;
  accountUuid: string;
  /** The `sub` a new account gets; an existing one keeps its own. */
  newSub: string;
  name: string;
  now: Date;
}

/** The organization's account of this player, created or renamed; returns its id. */
export async function upsertGameAccount(query: Query, a: GameAccountFacts): Promise<string> {
  const [row] = await query<{ id: string }>(
    `insert into game_accounts (id, organization_id, game, account_uuid, sub, name, created_at, updated_at)
     values (?, ?, ?, ?, ?, ?, ?, ?)
     on conflict (organization_id, game, account_uuid) do update set name = excluded.name, updated_at = excluded.updated_at
     returning id`,
    [randomUUID(), a.organizationId, a.game, a.accountUuid, a.newSub, a.name, a.now, a.now],
  );
  return row.id;
}

export interface NewGameCode {
  codeHash: string;
  clientUuid: string;
  organizationId: string;
  sessionId: string;
  gameAccountId: string;
  serverId: string;
  completed: CompletedRow;
  expiresAt: Date;
  now: Date;
}

export async function insertGameCode(query: Query, c: NewGameCode): Promise<void> {
  const d = c.completed;
  await query(
    `insert into authorization_codes (id, code_hash, game_oauth_client_id, organization_id, hosted_authorization_id, game_account_id,
       server_id, redirect_uri, nonce, code_challenge, code_challenge_method, auth_time, expires_at, created_at)
     values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    [
      randomUUID(), c.codeHash, c.clientUuid, c.organizationId, c.sessionId, c.gameAccountId, c.serverId,
      d.redirect_uri, d.nonce, d.code_challenge, d.code_challenge_method, c.now, c.expiresAt, c.now,
    ],
  );
}

/** Stores the browser's sealed copy of the redirect URL with its code. */
export async function storeSealedRedirect(query: Query, sessionId: string, sealed: string): Promise<void> {
  await query(`update hosted_authorizations set redirect_url_sealed = ? where id = ?`, [sealed, sessionId]);
}
