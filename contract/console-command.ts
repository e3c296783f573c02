/**
 * What a console command may hold, shared by core (which refuses it before anything runs) and the
 * agent (which refuses it before writing to the game server's stdin, whoever sent it): one line of
 * text (contract/one-line.ts), so no control character (CR, LF, tab, ESC, NUL, U+0085 and the
 * rest, which a terminal or the server's console reader may act on), no line or paragraph
 * separator (U+2028, U+2029) and no bidirectional text control, which would make the command a
 * person allows read differently from the one that runs. The contract's `one_line` rule on
 * ExecuteConsoleCommandRequest.command says the same.
 */
import { offLineCharacter } from "./one-line.ts";

/** Why `command` cannot go to a console, or undefined when it can. */
export function consoleCommandProblem(command: string): string | undefined {
  const found = offLineCharacter(command);
  if (!found) return undefined;
  return `a console command is one line of text, without control characters, line separators or bidirectional text controls (${found.codePoint} at position ${found.position})`;
}
