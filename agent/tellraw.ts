/**
 * The in-game answer to a player, as one console command: `tellraw <name> <component>`. It goes to
 * the server's stdin, where a newline would start a second command, so the name must be a plain
 * player name and the text loses every control and line-separator character before it is
 * JSON-encoded (which then escapes only quotes and backslashes, the same in JSON and in the SNBT
 * that Minecraft 1.21.5+ parses components as).
 */

/** How the answer reads: a sign-in done, a question to the player, or a refusal or problem. */
export type Tone = "accepted" | "question" | "refused";

const colours: Record<Tone, string> = { accepted: "green", question: "yellow", refused: "red" };

const playerName = /^[A-Za-z0-9_]{1,16}$/;

/** Control characters, and the Unicode line and paragraph separators, which no answer needs. */
const unprintable = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;

/** The `tellraw` command that shows `message` to `name`, prefixed with "[Outpost]". */
export function tellraw(name: string, message: string, tone: Tone): string {
  if (!playerName.test(name)) throw new Error(`"${name}" is not a player name`);
  const component = {
    text: "[Outpost] ",
    color: "gold",
    extra: [{ text: message.replace(unprintable, " "), color: colours[tone] }],
  };
  return `tellraw ${name} ${JSON.stringify(component)}`;
}
