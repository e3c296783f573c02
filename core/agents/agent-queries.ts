/**
 * The agents' SQL: a server's presence as its streams report it (connected, alive, gone, and the
 * sweep of servers whose instance died) and its online players. Every write checks which stream
 * holds the server (`agent_connection_id`), so a stream that was taken over changes nothing.
 */
import type { Query } from "../db/statements.ts";
import type { OnlinePlayer } from "./connections.ts";
import { serverRankSql } from "../servers/frozen-queries.ts";

export interface ConnectedFacts {
  serverId: string;
  agentKeyHash: string;
  connectionId: string;
  playerAuth: string;
  agentVersion: string | null;
  console: boolean;
  now: Date;
}

/**
 * Marks the server online and held by this stream, if the key still belongs to it (its row
 * locked); returns the presence event before, or undefined when the key no longer works.
 */
export async function markServerConnected(query: Query, f: ConnectedFacts): Promise<{ previous: string | null } | undefined> {
  const [row] = await query<{ previous: string | null }>(
    `with old as (select id, presence_event from servers where id = ? and agent_key_hash = ? for update)
     update servers s set online = true, last_seen_at = ?, player_count = 0, player_auth = ?, agent_version = ?, agent_console = ?,
                          agent_connection_id = ?, presence_event = 'connected'
       from old where s.id = old.id returning old.presence_event as previous`,
    [f.serverId, f.agentKeyHash, f.now, f.playerAuth, f.agentVersion, f.console, f.connectionId],
  );
  return row;
}

export async function clearPlayers(query: Query, serverId: string): Promise<void> {
  await query(`delete from server_players where server_id = ?`, [serverId]);
}

/**
 * A heartbeat of the stream that holds the server with a key that still works: the server's rank
 * and its organization's plan (whether it is frozen now: core/servers/frozen.ts); undefined otherwise.
 */
export async function markServerSeen(
  query: Query,
  serverId: string,
  agentKeyHash: string,
  connectionId: string,
  now: Date,
): Promise<{ rank: number; plan: string } | undefined> {
  const [row] = await query<{ rank: number; plan: string }>(
    `update servers s set last_seen_at = ?, online = true where id = ? and agent_key_hash = ? and agent_connection_id = ?
     returning ${serverRankSql("s")} as rank, (select o.plan from organizations o where o.id = s.organization_id) as plan`,
    [now, serverId, agentKeyHash, connectionId],
  );
  return row;
}

/** Whether the key still belongs to the server. */
export async function serverHoldsKey(query: Query, serverId: string, agentKeyHash: string): Promise<boolean> {
  const [row] = await query(`select id from servers where id = ? and agent_key_hash = ?`, [serverId, agentKeyHash]);
  return row !== undefined;
}

/** The server goes offline with its players, if this stream still holds it; true when it did. */
export async function markServerGone(query: Query, serverId: string, connectionId: string, now: Date): Promise<boolean> {
  const [row] = await query<{ went: number }>(
    `with gone as (
       update servers set online = false, player_count = 0, agent_connection_id = null, last_seen_at = ?
        where id = ? and agent_connection_id = ? returning id
     ), cleared as (delete from server_players p using gone where p.server_id = gone.id)
     select count(*)::int as went from gone`,
    [now, serverId, connectionId],
  );
  return (row?.went ?? 0) > 0;
}

/** A server whose disconnect is to be written. */
export interface GoneServerRow {
  id: string;
  organization_id: string;
  last_seen_at: Date;
}

/** Servers connected but silent since `silentSince` are marked disconnected and offline, their players cleared. */
export function markSilentServersDisconnected(query: Query, silentSince: Date): Promise<GoneServerRow[]> {
  return query<GoneServerRow>(
    `with gone as (
       update servers set presence_event = 'disconnected', online = false, player_count = 0
        where presence_event = 'connected' and last_seen_at < ? returning id, organization_id, last_seen_at
     ), cleared as (delete from server_players p using gone where p.server_id = gone.id)
     select id, organization_id, last_seen_at from gone`,
    [silentSince],
  );
}

/** Servers online but unheard since `staleSince` go offline, their players cleared. */
export async function takeStaleServersOffline(query: Query, staleSince: Date): Promise<void> {
  await query(
    `with stale as (update servers set online = false, player_count = 0 where online and last_seen_at < ? returning id)
     delete from server_players p using stale where p.server_id = stale.id`,
    [staleSince],
  );
}

/** Sets the player count if this stream holds the server (its row locked); false otherwise. */
export async function setPlayerCount(query: Query, serverId: string, connectionId: string, count: number): Promise<boolean> {
  const held = await query(`update servers set player_count = ? where id = ? and agent_connection_id = ? returning id`, [count, serverId, connectionId]);
  return held.length > 0;
}

/** Makes the stored players these: those gone deleted, those new since `now`, those who stay keep theirs and take their name. */
export async function storePlayers(query: Query, serverId: string, players: readonly OnlinePlayer[], now: Date): Promise<void> {
  const json = JSON.stringify(players);
  await query(
    `delete from server_players where server_id = ?
        and uuid not in (select uuid from jsonb_to_recordset(?::jsonb) as p(uuid uuid, name text))`,
    [serverId, json],
  );
  if (!players.length) return;
  await query(
    `insert into server_players (server_id, uuid, name, since)
     select ?, p.uuid, p.name, ? from jsonb_to_recordset(?::jsonb) as p(uuid uuid, name text)
     on conflict (server_id, uuid) do update set name = excluded.name`,
    [serverId, now, json],
  );
}

export function listPlayers(query: Query, serverId: string): Promise<Array<{ uuid: string; name: string; since: Date }>> {
  return query(`select uuid, name, since from server_players where server_id = ? order by since, name, uuid`, [serverId]);
}
