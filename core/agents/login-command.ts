/**
 * The in-game command that proves a player: `/outpost login XXXX-XXXX`. Case does not matter,
 * the hyphen is optional and extra spaces are fine, because players type it by hand.
 */

/** What a player reads when the command is not one Outpost understands. */
export const loginUsage = "Usage: /outpost login <CODE>, with the code shown on the sign-in page (for example /outpost login ABCD-1234).";

const command = /^\/?outpost\s+login\s+([a-z0-9]{4})\s*-?\s*([a-z0-9]{4})$/i;

/** The login code of the command, normalized ("ABCD1234"), or undefined for any other text. */
export function parseLoginCommand(text: string): string | undefined {
  const match = command.exec(text.trim());
  return match ? `${match[1]}${match[2]}`.toUpperCase() : undefined;
}

/** A normalized code as players see it: "ABCD-1234". */
export function formatLoginCode(code: string): string {
  return `${code.slice(0, 4)}-${code.slice(4)}`;
}
