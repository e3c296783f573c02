/**
 * The in-game half of a hosted sign-in, in SQL: finding the session a command is about, claiming
 * it on its locked row, releasing and sweeping claims, and completing it (the game account, the
 * authorization code, the browser's sealed redirect). The pieces shared by two statements are
 * fragments in this file, beside both.
 */
import { randomUUID } from "node:crypto";
import { sql, type Sql, type SqlRunner } from "../db/sql.ts";
import { bool, nullable, row, text, timestamp, type Row } from "../db/rows.ts";

/** A session with what the reporting server may do with it. */
const verifiedSessionRow = row({
  id: text,
  organization_id: text,
  redirect_uri: text,
  client_uuid: text,
  client_id: text,
  client_name: text,
  verifier_policy: text,
  allowed: bool,
  server_online: nullable(bool),
  server_last_seen_at: nullable(timestamp),
  /** The server still holds the key the reporting stream authenticated with. */
  key_current: nullable(bool),
  /** The session's claim, if any (it may have run out, or its server been deleted). */
  claimed_server_id: nullable(text),
  claimed_player_uuid: nullable(text),
  claimed_until: nullable(timestamp),
});
export type VerifiedSessionRow = Row<typeof verifiedSessionRow>;

/** The reporting server: its id and the hash of the key its stream authenticated with. */
export interface Reporter {
  serverId: string;
  agentKeyHash: string;
}

/** A session (`h`) joined to its client and to the reporting server; a `where` follows. */
const verifiedSession = (by: Reporter): Sql =>
  sql`select h.id, h.organization_id, h.redirect_uri, c.id as client_uuid, c.client_id, c.name as client_name, c.verifier_policy,
             h.claimed_server_id, h.claimed_player_uuid, h.claimed_until,
             exists (select 1 from game_oauth_client_servers cs where cs.game_oauth_client_id = c.id and cs.server_id = ${by.serverId}) as allowed,
             s.online as server_online, s.last_seen_at as server_last_seen_at, s.agent_key_hash = ${by.agentKeyHash} as key_current
        from hosted_authorizations h
        join game_oauth_clients c on c.id = h.game_oauth_client_id
        left join servers s on s.id = ${by.serverId}`;

/** The pending, unexpired session waiting for this login code. */
export function sessionByLoginCode(query: SqlRunner, by: Reporter, loginCodeHash: string, now: Date): Promise<VerifiedSessionRow | undefined> {
  return query.one(
    sql`${verifiedSession(by)}
         where h.login_code_hash = ${loginCodeHash} and h.status = 'pending' and h.expires_at > ${now}`,
    verifiedSessionRow,
  );
}

/** The pending session the player claimed last on the reporting server, while the claim lasts. */
export function sessionClaimedBy(query: SqlRunner, by: Reporter, playerUuid: string, now: Date): Promise<VerifiedSessionRow | undefined> {
  return query.one(
    sql`${verifiedSession(by)}
         where h.claimed_server_id = ${by.serverId} and h.claimed_player_uuid = ${playerUuid} and h.status = 'pending'
           and h.claimed_until > ${now} and h.expires_at > ${now}
         order by h.claimed_at desc limit 1`,
    verifiedSessionRow,
  );
}

/**
 * The app of a sign-in this player completed on this server since `since`, if any: a confirmation
 * asked again (its first answer lost with its connection) is told it went through.
 */
export async function appOfSignInCompletedBy(query: SqlRunner, serverId: string, playerUuid: string, since: Date): Promise<string | undefined> {
  const found = await query.one(
    sql`select c.name as client_name from hosted_authorizations h join game_oauth_clients c on c.id = h.game_oauth_client_id
         where h.claimed_server_id = ${serverId} and h.claimed_player_uuid = ${playerUuid} and h.status = 'completed' and h.completed_at > ${since}
         order by h.completed_at desc limit 1`,
    row({ client_name: text }),
  );
  return found?.client_name;
}

/** A session's claim as the activity log tells it. */
const claimRow = row({
  id: text,
  organization_id: text,
  client_id: text,
  client_name: text,
  server_id: nullable(text),
  player_uuid: text,
  player_name: text,
});
export type ClaimRow = Row<typeof claimRow>;

/** The session's claim before a new one. */
const heldRow = row({
  claimed_server_id: nullable(text),
  claimed_player_uuid: nullable(text),
  claimed_player_name: nullable(text),
  claimed_until: nullable(timestamp),
  expires_at: timestamp,
});
export type HeldRow = Row<typeof heldRow>;

/** Locks the pending, unexpired session's row (in a transaction) and reads its claim. */
export function lockPendingSession(query: SqlRunner, sessionId: string, now: Date): Promise<HeldRow | undefined> {
  return query.one(
    sql`select claimed_server_id, claimed_player_uuid, claimed_player_name, claimed_until, expires_at from hosted_authorizations
         where id = ${sessionId} and status = 'pending' and expires_at > ${now} for update`,
    heldRow,
  );
}

export interface NewClaim {
  sessionId: string;
  serverId: string;
  playerUuid: string;
  playerName: string;
  now: Date;
  until: Date;
}

/** Sets the claim on the session's row (locked by {@link lockPendingSession}); the claim as the log tells it. */
export async function setClaim(query: SqlRunner, c: NewClaim): Promise<ClaimRow> {
  const claimed = await query.one(
    sql`update hosted_authorizations h
           set claimed_server_id = ${c.serverId}, claimed_player_uuid = ${c.playerUuid}, claimed_player_name = ${c.playerName},
               claimed_at = ${c.now}, claimed_until = ${c.until}
          from game_oauth_clients c
         where h.id = ${c.sessionId} and c.id = h.game_oauth_client_id
        returning h.id, h.organization_id, c.client_id, c.name as client_name, h.claimed_server_id as server_id,
                  h.claimed_player_uuid as player_uuid, h.claimed_player_name as player_name`,
    claimRow,
  );
  if (!claimed) throw new Error(`the locked session ${c.sessionId} was not found to claim`);
  return claimed;
}

const nilUuid = "00000000-0000-0000-0000-000000000000";

/** Clears the claims of the sessions in `old` (a CTE), returning each claim as it was. */
const clearOldClaims = sql`update hosted_authorizations h
        set claimed_server_id = null, claimed_player_uuid = null, claimed_player_name = null, claimed_at = null, claimed_until = null
       from old, game_oauth_clients c
      where h.id = old.id and c.id = h.game_oauth_client_id
     returning h.id, h.organization_id, c.client_id, c.name as client_name, old.claimed_server_id as server_id,
               old.claimed_player_uuid as player_uuid, old.claimed_player_name as player_name`;

/** Clears the player's live claims on the server (but the session `except`); returns them as they were. */
export function releaseClaims(query: SqlRunner, serverId: string, playerUuid: string, now: Date, except?: string): Promise<ClaimRow[]> {
  return query.rows(
    sql`with old as (
          select h.id, h.claimed_server_id, h.claimed_player_uuid, h.claimed_player_name from hosted_authorizations h
           where h.claimed_server_id = ${serverId} and h.claimed_player_uuid = ${playerUuid} and h.status = 'pending' and h.claimed_until > ${now}
             and h.id <> ${except ?? nilUuid}
           for update)
        ${clearOldClaims}`,
    claimRow,
  );
}

/** Clears the claims that ran out by `now` (rows another instance holds are left to it); returns them as they were. */
export function clearLapsedClaims(query: SqlRunner, now: Date): Promise<ClaimRow[]> {
  return query.rows(
    sql`with old as (
          select h.id, h.claimed_server_id, h.claimed_player_uuid, h.claimed_player_name from hosted_authorizations h
           where h.status = 'pending' and h.claimed_until <= ${now} for update skip locked)
        ${clearOldClaims}`,
    claimRow,
  );
}

/** What a completed session hands on to its code. */
const completedRow = row({
  redirect_uri: text,
  state: text,
  nonce: nullable(text),
  code_challenge: nullable(text),
  code_challenge_method: nullable(text),
  completion_key: text,
  claimed_player_name: nullable(text),
});
export type CompletedRow = Row<typeof completedRow>;

/** Completes the session if it is pending, in time and claimed by this player on this server. */
export function completeSession(query: SqlRunner, sessionId: string, serverId: string, playerUuid: string, now: Date): Promise<CompletedRow | undefined> {
  return query.one(
    sql`update hosted_authorizations set status = 'completed', completed_at = ${now}
         where id = ${sessionId} and status = 'pending' and expires_at > ${now} and completion_key is not null
           and claimed_server_id = ${serverId} and claimed_player_uuid = ${playerUuid} and claimed_until > ${now}
        returning redirect_uri, state, nonce, code_challenge, code_challenge_method, completion_key, claimed_player_name`,
    completedRow,
  );
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
export async function upsertGameAccount(query: SqlRunner, a: GameAccountFacts): Promise<string> {
  const account = await query.one(
    sql`insert into game_accounts (id, organization_id, game, account_uuid, sub, name, created_at, updated_at)
        values (${randomUUID()}, ${a.organizationId}, ${a.game}, ${a.accountUuid}, ${a.newSub}, ${a.name}, ${a.now}, ${a.now})
        on conflict (organization_id, game, account_uuid) do update set name = excluded.name, updated_at = excluded.updated_at
        returning id`,
    row({ id: text }),
  );
  // An upsert returns its row whichever way it went.
  return account!.id;
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

export async function insertGameCode(query: SqlRunner, c: NewGameCode): Promise<void> {
  const d = c.completed;
  await query.run(
    sql`insert into authorization_codes (id, code_hash, game_oauth_client_id, organization_id, hosted_authorization_id, game_account_id,
          server_id, redirect_uri, nonce, code_challenge, code_challenge_method, auth_time, expires_at, created_at)
        values (${randomUUID()}, ${c.codeHash}, ${c.clientUuid}, ${c.organizationId}, ${c.sessionId}, ${c.gameAccountId},
          ${c.serverId}, ${d.redirect_uri}, ${d.nonce}, ${d.code_challenge}, ${d.code_challenge_method}, ${c.now}, ${c.expiresAt}, ${c.now})`,
  );
}

/** Stores the browser's sealed copy of the redirect URL with its code. */
export async function storeSealedRedirect(query: SqlRunner, sessionId: string, sealed: string): Promise<void> {
  await query.run(sql`update hosted_authorizations set redirect_url_sealed = ${sealed} where id = ${sessionId}`);
}
