/**
 * What the contract accepts of a player and of an in-game command, checked before sending: a
 * message the contract refuses would make Outpost end the stream, and reconnecting could not help.
 */
import { maxPlayersPerMessage } from "../contract/request-limits.ts";
import { offLineCharacter, visibleLine } from "../contract/one-line.ts";
import { isUuid } from "../contract/uuid.ts";

export interface Player {
  name: string;
  uuid: string;
}

/** The most players one Players message may list (the contract's max_items). */
export const maxPlayers = maxPlayersPerMessage;

/** Why a player would be refused by the contract's rules, if it would. */
export function playerProblem(player: Player): string | undefined {
  if (!isUuid(player.uuid)) return `"${player.uuid}" is not a UUID`;
  if (!/^\S{1,32}$/.test(player.name) || offLineCharacter(player.name)) {
    return `"${visibleLine(player.name)}" is not a player name (1 to 32 characters, no spaces, control characters or bidirectional text controls)`;
  }
  return undefined;
}

/** Why a player or command would be refused by the contract's rules, if it would. */
export function commandProblem(player: Player, text: string): string | undefined {
  const problem = playerProblem(player);
  if (problem) return problem;
  if (text.trim() === "" || text.length > 256) return "a command has 1 to 256 characters";
  return undefined;
}
