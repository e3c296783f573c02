/**
 * The agents' SQL: a server's presence as its streams report it (connected, alive, gone, and the
 * sweep of servers whose instance died) and its online players. Every write checks which stream
 * holds the server (`agent_connection_id`), so a stream that was taken over changes nothing.
 */
import { sql, type SqlRunner } from "../db/sql.ts";
import { bool, int, nullable, row, text, timestamp, type Row } from "../db/rows.ts";
import type { OnlinePlayer } from "./connections.ts";

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

/** A heartbeat to write: the server, the key its stream authenticated with, the stream. */
export interface Beat {
  serverId: string;
  agentKeyHash: string;
  connectionId: string;
}

/**
 * What a heartbeat found, in the order of the beats: `seen` when the stream still holds the server
 * with a key that works (then the server's rank among its organization's servers and the plan, to
 * tell whether it is frozen: core/servers/frozen.ts); otherwise whether the key still belongs to the
 * server (another stream took it over) or not (the key was regenerated or the server deleted).
 */
const beatRow = row({ seen: bool, holds_key: bool, rank: nullable(int), plan: nullable(text) });
export type BeatRow = Row<typeof beatRow>;

/**
 * Heartbeats of many streams in one statement: moves `last_seen_at` of each server whose stream
 * still holds it, and ranks the servers of the organizations concerned once (a window over their
 * servers, instead of a count of older servers per heartbeat). No two beats may be the same
 * (server, key, stream): the row would be updated once, for one of them.
 */
export function markServersSeen(query: SqlRunner, beats: readonly Beat[], now: Date): Promise<BeatRow[]> {
  const col = <K extends keyof Beat>(k: K) => beats.map((b) => b[k]);
  return query.rows(
    sql`with beat as (
          select * from unnest(${col("serverId")}::uuid[], ${col("agentKeyHash")}::text[], ${col("connectionId")}::uuid[])
                   with ordinality as b(server_id, key_hash, connection_id, n)
        ), seen as (
          update servers s set last_seen_at = ${now}, online = true
            from beat b
           where s.id = b.server_id and s.agent_key_hash = b.key_hash and s.agent_connection_id = b.connection_id
          returning b.n, s.id, s.organization_id
        ), ranked as (
          select id, row_number() over (partition by organization_id order by created_at, id)::int as rank
            from servers where organization_id in (select organization_id from seen)
        )
        select se.id is not null as seen, exists (select 1 from servers h where h.id = b.server_id and h.agent_key_hash = b.key_hash) as holds_key,
               r.rank, o.plan
          from beat b
          left join seen se on se.n = b.n
          left join ranked r on r.id = se.id
          left join organizations o on o.id = se.organization_id
         order by b.n`,
    beatRow,
  );
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
