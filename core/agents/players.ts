/**
 * The players online on each server, kept in the database so that every instance can list them
 * (servers/listPlayers), whichever one holds the agent's stream. Only the stream that holds the
 * server (its `agent_connection_id`) may replace the list; each replacement keeps the `since` of
 * the players who stay, and `player_count` moves with it in the same transaction. The list is
 * cleared where the server goes offline (core/agents/presence.ts).
 */
import type { EntityManager } from "@mikro-orm/postgresql";
import type { OnlinePlayer } from "./connections.ts";
import { inTransaction, type SqlRunner } from "../db/sql.ts";
import { listPlayers, setPlayerCount, storePlayers } from "./agent-queries.ts";

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
export async function replacePlayers(em: EntityManager, serverId: string, connectionId: string, players: readonly OnlinePlayer[], now: Date): Promise<boolean> {
  const list = distinctPlayers(players);
  return em.fork().transactional(async (tx) => {
    const query = inTransaction(tx);
    // Locks the row: two reports of the same stream, or a Hello that takes over, go one at a time.
    if (!(await setPlayerCount(query, serverId, connectionId, list.length))) return false;
    await storePlayers(query, serverId, list, now);
    return true;
  });
}

/** The server's players as stored, longest online first (callers check that the server is online). */
export function storedPlayers(query: SqlRunner, serverId: string): Promise<StoredPlayer[]> {
  return listPlayers(query, serverId);
}
