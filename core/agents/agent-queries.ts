/**
 * The agents' SQL: a server's presence as its streams report it (connected, alive, gone, and the
 * sweep of servers whose instance died) and its online players. Every write checks which stream
 * holds the server (`agent_connection_id`), so a stream that was taken over changes nothing.
 */
import { sql, type SqlRunner } from "../db/sql.ts";
import { int, nullable, row, text, timestamp, type Row } from "../db/rows.ts";
import type { OnlinePlayer } from "./connections.ts";
import { serverRank } from "../servers/frozen-queries.ts";

export interface ConnectedFacts {
  serverId: string;
  agentKeyHash: string;
  connectionId: string;
  playerAuth: string;
  agentVersion: string | null;
  console: boolean;
  files: string;
  lifecycle: boolean;
  bootId: string | null;
  now: Date;
}

const connectedRow = row({ previous: nullable(text) });

/**
 * Marks the server online and held by this stream, if the key still belongs to it (its row
 * locked); returns the presence event before, or undefined when the key no longer works.
 */
export function markServerConnected(query: SqlRunner, f: ConnectedFacts): Promise<Row<typeof connectedRow> | undefined> {
  return query.one(
    sql`with old as (select id, presence_event from servers where id = ${f.serverId} and agent_key_hash = ${f.agentKeyHash} for update)
        update servers s set online = true, last_seen_at = ${f.now}, player_count = 0, player_auth = ${f.playerAuth}, agent_version = ${f.agentVersion},
                             agent_console = ${f.console}, agent_files = ${f.files}, agent_lifecycle = ${f.lifecycle}, agent_connection_id = ${f.connectionId}, agent_boot_id = ${f.bootId}, presence_event = 'connected'
          from old where s.id = old.id returning old.presence_event as previous`,
    connectedRow,
  );
}

export async function clearPlayers(query: SqlRunner, serverId: string): Promise<void> {
  await query.run(sql`delete from server_players where server_id = ${serverId}`);
}

const seenRow = row({ rank: int, plan: text });

/**
 * A heartbeat of the stream that holds the server with a key that still works: the server's rank
 * and its organization's plan (whether it is frozen now: core/servers/frozen.ts); undefined otherwise.
 */
export function markServerSeen(query: SqlRunner, serverId: string, agentKeyHash: string, connectionId: string, now: Date): Promise<Row<typeof seenRow> | undefined> {
  return query.one(
    sql`update servers s set last_seen_at = ${now}, online = true
         where id = ${serverId} and agent_key_hash = ${agentKeyHash} and agent_connection_id = ${connectionId}
        returning ${serverRank(sql`s`)} as rank, (select o.plan from organizations o where o.id = s.organization_id) as plan`,
    seenRow,
  );
}

/** Whether the key still belongs to the server. */
export async function serverHoldsKey(query: SqlRunner, serverId: string, agentKeyHash: string): Promise<boolean> {
  const found = await query.one(sql`select id from servers where id = ${serverId} and agent_key_hash = ${agentKeyHash}`, row({ id: text }));
  return found !== undefined;
}

/** The server goes offline with its players, if this stream still holds it; true when it did. */
export async function markServerGone(query: SqlRunner, serverId: string, connectionId: string, now: Date): Promise<boolean> {
  const gone = await query.one(
    sql`with gone as (
          update servers set online = false, player_count = 0, agent_connection_id = null, last_seen_at = ${now}
           where id = ${serverId} and agent_connection_id = ${connectionId} returning id
        ), cleared as (delete from server_players p using gone where p.server_id = gone.id)
        select count(*) as went from gone`,
    row({ went: int }),
  );
  return (gone?.went ?? 0) > 0;
}

const goneServerRow = row({ id: text, organization_id: text, last_seen_at: timestamp });
/** A server whose disconnect is to be written. */
export type GoneServerRow = Row<typeof goneServerRow>;

/** Servers connected but silent since `silentSince` are marked disconnected and offline, their players cleared. */
export function markSilentServersDisconnected(query: SqlRunner, silentSince: Date): Promise<GoneServerRow[]> {
  return query.rows(
    sql`with gone as (
          update servers set presence_event = 'disconnected', online = false, player_count = 0
           where presence_event = 'connected' and last_seen_at < ${silentSince} returning id, organization_id, last_seen_at
        ), cleared as (delete from server_players p using gone where p.server_id = gone.id)
        select id, organization_id, last_seen_at from gone`,
    goneServerRow,
  );
}

/** Servers online but unheard since `staleSince` go offline, their players cleared. */
export async function takeStaleServersOffline(query: SqlRunner, staleSince: Date): Promise<void> {
  await query.run(
    sql`with stale as (update servers set online = false, player_count = 0 where online and last_seen_at < ${staleSince} returning id)
        delete from server_players p using stale where p.server_id = stale.id`,
  );
}

/** Sets the player count if this stream holds the server (its row locked); false otherwise. */
export async function setPlayerCount(query: SqlRunner, serverId: string, connectionId: string, count: number): Promise<boolean> {
  const held = await query.run(sql`update servers set player_count = ${count} where id = ${serverId} and agent_connection_id = ${connectionId}`);
  return held > 0;
}

/** Makes the stored players these: those gone deleted, those new since `now`, those who stay keep theirs and take their name. */
export async function storePlayers(query: SqlRunner, serverId: string, players: readonly OnlinePlayer[], now: Date): Promise<void> {
  const json = JSON.stringify(players);
  await query.run(
    sql`delete from server_players where server_id = ${serverId}
           and uuid not in (select uuid from jsonb_to_recordset(${json}::jsonb) as p(uuid uuid, name text))`,
  );
  if (!players.length) return;
  await query.run(
    sql`insert into server_players (server_id, uuid, name, since)
        select ${serverId}::uuid, p.uuid, p.name, ${now}::timestamptz from jsonb_to_recordset(${json}::jsonb) as p(uuid uuid, name text)
        on conflict (server_id, uuid) do update set name = excluded.name`,
  );
}

const playerRow = row({ uuid: text, name: text, since: timestamp });
export type PlayerRow = Row<typeof playerRow>;

export function listPlayers(query: SqlRunner, serverId: string): Promise<PlayerRow[]> {
  return query.rows(sql`select uuid, name, since from server_players where server_id = ${serverId} order by since, name, uuid`, playerRow);
}

const gameStateRow = row({ previous: nullable(text), previous_detail: nullable(text) });

/**
 * The game's state as the stream that holds the server reports it; the state before, or undefined
 * when this stream no longer holds the server (it changes nothing then).
 */
export function markGameState(
  query: SqlRunner,
  f: { serverId: string; connectionId: string; state: string; detail: string; now: Date },
): Promise<Row<typeof gameStateRow> | undefined> {
  return query.one(
    sql`with old as (select id, game_state, game_state_detail from servers where id = ${f.serverId} and agent_connection_id = ${f.connectionId} for update)
        update servers s set game_state = ${f.state}, game_state_detail = ${f.detail || null}, game_state_at = ${f.now}, game_state_connection_id = ${f.connectionId}
          from old where s.id = old.id returning old.game_state as previous, old.game_state_detail as previous_detail`,
    gameStateRow,
  );
}

/** The memory limit the server's agent reported (for alert thresholds on memory). */
export async function storeMemoryLimit(query: SqlRunner, serverId: string, bytes: bigint): Promise<void> {
  await query.run(sql`update servers set memory_limit_bytes = ${String(bytes)} where id = ${serverId}`);
}
