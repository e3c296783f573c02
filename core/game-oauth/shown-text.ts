/**
 * Text that players read in game and on the hosted page, but that others chose: an app's name
 * (whoever registers the client), a server's name, a player's name. Minecraft's § formatting codes
 * (`§k` scrambles the rest of the line), control characters and bidirectional text controls could
 * hide or reorder what follows, above all the app's host, the prompt's defence against phishing.
 * Client names with them are refused (the contract's `one_line` and
 * `game_oauth_client.name.no_formatting_codes` rules); this strips them from any text shown, names
 * stored before those rules included.
 */
import { notOnOneLine } from "../../contract/one-line.ts";

/** A § with the code it starts, or one character that formats or controls instead of showing. */
const hiding = new RegExp(`§.?|${notOnOneLine.source}`, "gsu");

/** `text` without what could hide or reorder what follows it, spaces collapsed; `fallback` if nothing is left. */
export function shownText(text: string, fallback = "(unnamed)"): string {
  return text.replace(hiding, "").replace(/\s+/gu, " ").trim() || fallback;
}

/** An app's name as players read it. */
export const appNameShown = (name: string) => shownText(name, "the app");
