/**
 * The in-game commands that prove a player: `/outpost login XXXX-XXXX`, then `/outpost confirm`
 * (or `/outpost cancel`) when asked. Case does not matter, the hyphen is optional and extra spaces
 * are fine, because players type them by hand. One home for core (which reads them) and the agent
 * (which recognises them on the console and registers them as a game command).
 */

/** The command's name in game, without the slash. */
export const commandName = "outpost";

/** Every form of the command, for a game's command help. */
export const commandForms = "/outpost login <code> | /outpost confirm | /outpost cancel";

/** What a player types to confirm a sign-in they claimed, and to refuse it. */
export const confirmCommand = "/outpost confirm";
export const cancelCommand = "/outpost cancel";

/** What a player reads when the command is not one Outpost understands. */
export const loginUsage =
  "Usage: /outpost login <CODE>, with the code shown on the sign-in page (for example /outpost login ABCD-1234); " +
  `then ${confirmCommand} when asked, only if you started the sign-in yourself.`;

const anyOutpostCommand = /^\/outpost(?:\s|$)/i;
const command = /^\/?outpost\s+login\s+([a-z0-9]{4})\s*-?\s*([a-z0-9]{4})$/i;
const answer = /^\/?outpost\s+(confirm|cancel)$/i;

/** Whether a player's text is an /outpost command at all (understood or not): the agent plays those to Outpost. */
export function isOutpostCommand(text: string): boolean {
  return anyOutpostCommand.test(text);
}

/** A command Outpost understands. */
export type OutpostCommand = { kind: "login"; code: string } | { kind: "confirm" } | { kind: "cancel" };

/** The login code of the command, normalized ("ABCD1234"), or undefined for any other text. */
export function parseLoginCommand(text: string): string | undefined {
  const match = command.exec(text.trim());
  return match ? `${match[1]}${match[2]}`.toUpperCase() : undefined;
}

/** The command in `text`, or undefined for text that is none of them. */
export function parseOutpostCommand(text: string): OutpostCommand | undefined {
  const code = parseLoginCommand(text);
  if (code) return { kind: "login", code };
  const match = answer.exec(text.trim());
  return match ? { kind: match[1].toLowerCase() as "confirm" | "cancel" } : undefined;
}

/** A normalized code as players see it: "ABCD-1234". */
export function formatLoginCode(code: string): string {
  return `${code.slice(0, 4)}-${code.slice(4)}`;
}
