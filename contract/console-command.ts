/**
 * What a console command may hold, shared by core (which refuses it before anything runs) and the
 * agent (which refuses it before writing to the game server's stdin, whoever sent it): one line of
 * text, with no Unicode control character (Cc: CR, LF, tab, ESC, NUL, U+0085 and the rest, which a
 * terminal or the server's console reader may act on) nor line or paragraph separator (Zl, Zp:
 * U+2028, U+2029). The contract's pattern on ExecuteConsoleCommandRequest.command says the same.
 */

const forbidden = /[\p{Cc}\p{Zl}\p{Zp}]/u;

/** Why `command` cannot go to a console, or undefined when it can. */
export function consoleCommandProblem(command: string): string | undefined {
  const found = forbidden.exec(command);
  if (!found) return undefined;
  const code = found[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0");
  return `a console command is one line of text, without control characters or line separators (U+${code} at position ${found.index + 1})`;
}
