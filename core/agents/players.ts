/**
 * The players online on each server, kept in the database so that every instance can list them
 * (servers/listPlayers), whichever one holds the agent's stream. Only the stream that holds the
 * server (its `agent_connection_id`) may replace the list; each replacement keeps the `since` of
 * the players who stay, and `player_count` moves with it in the same transaction. The list is
 * cleared where the server goes offline (core/agents/presence.ts).
 */
import type { EntityManager } from "@mikro-orm/postgresql";
import type { OnlinePlayer } from "./connections.ts";

export interface StoredPlayer extends OnlinePlayer {
  /** When the agent first reported the player in this stay of theirs. */
  since: Date;
}

/** The list once, each UUID (lower-case) once: the last name reported for it wins. */
export function distinctPlayers(players: readonly OnlinePlayer[]): OnlinePlayer[] {
  const byUuid = new Map<string, OnlinePlayer>();
  for (const player of players) {
    const uuid = player.uuid.toLowerCase();
    byUuid.delete(uuid);
    byUuid.set(uuid, { uuid, name: player.name });
  }
  return [...byUuid.values()];
}

/**
 * Replaces the server's players with `players`, if the stream `connectionId` still holds the
 * server: those gone are deleted, those new start `since` now, those who stay keep theirs (and
 * take their current name). Returns false, changing nothing, when another stream holds it.
 */
export async function replacePlayers(
  em: EntityManager,
  serverId: string,
  connectionId: string,
  players: readonly OnlinePlayer[],
  now: Date,
): Promise<boolean> {
  const list = distinctPlayers(players);
  return em.fork().transactional(async (tx) => {
    // Locks the row: two reports of the same stream, or a Hello that takes over, go one at a time.
    const held = await tx.execute<Array<{ id: string }>>(
      `update servers set player_count = ? where id = ? and agent_connection_id = ? returning id`,
      [list.length, serverId, connectionId],
    );
    if (!held.length) return false;
    const json = JSON.stringify(list);
    await tx.execute(
      `delete from server_players where server_id = ?
          and uuid not in (select uuid from jsonb_to_recordset(?::jsonb) as p(uuid uuid, name text))`,
      [serverId, json],
      "run",
    );
    if (list.length) {
      await tx.execute(
        `insert into server_players (server_id, uuid, name, since)
         select ?, p.uuid, p.name, ? from jsonb_to_recordset(?::jsonb) as p(uuid uuid, name text)
         on conflict (server_id, uuid) do update set name = excluded.name`,
        [serverId, now, json],
        "run",
      );
    }
    return true;
  });
}

/** The server's players as stored, longest online first (callers check that the server is online). */
export async function storedPlayers(em: EntityManager, serverId: string): Promise<StoredPlayer[]> {
  const rows = await em.execute<Array<{ uuid: string; name: string; since: Date }>>(
    `select uuid, name, since from server_players where server_id = ? order by since, name, uuid`,
    [serverId],
  );
  return rows.map((row) => ({ uuid: row.uuid, name: row.name, since: new Date(row.since) }));
}
