/**
 * Console commands from Outpost (servers/executeConsoleCommand) on a wrapped server: the command
 * is written to the server's stdin like a line the operator typed, and the lines the console
 * prints next are its output: from the first, however long it takes (until Outpost stops
 * waiting), until the console has been quiet for a moment. A console has no notion of
 * which line answers which command, so commands run one at a time; lines printed meanwhile for
 * other reasons (a player joining) are part of the output too.
 */
import { consoleCommandProblem } from "../contract/console-command.ts";
import type { ConsoleHandler, ConsoleRun } from "./console.ts";

/** How long the console must stay quiet after a command's last line for its output to be complete. */
export const quietMs = 150;

/** The most lines one command collects (the contract's limit for one result). */
const maxLines = 200;

export interface ConsoleRunner {
  /** Runs one command from Outpost; see {@link ConsoleHandler}. */
  handler: ConsoleHandler;
  /** Runs one command of the agent's own (game-timing.ts), in turn with Outpost's, not announced to the operator. */
  probe: ConsoleHandler;
  /** Whether the lines printed now are collected for a probe. */
  probing(): boolean;
  /** Takes one line the console printed (plain text). */
  line(text: string): void;
}

/**
 * `write` puts one line on the server's stdin and says whether the server is there to take it;
 * `announce` tells the operator which command Outpost ran, since their console shows only output.
 */
export function createConsoleRunner(write: (line: string) => boolean, announce: (command: string) => void): ConsoleRunner {
  let queue: Promise<unknown> = Promise.resolve();
  let collect: ((text: string) => void) | undefined;
  let probing = false;

  function runOne(command: string, signal: AbortSignal, own: boolean): Promise<ConsoleRun> {
    if (signal.aborted) return Promise.resolve({ success: false, output: [], error: "the console was busy with earlier commands until Outpost stopped waiting" });
    // Whatever Outpost sent, nothing but one line of text reaches the server's stdin.
    const problem = consoleCommandProblem(command);
    if (problem) return Promise.resolve({ success: false, output: [], error: problem });
    return new Promise((resolve) => {
      const output: string[] = [];
      let quiet: NodeJS.Timeout | undefined;
      const finish = () => {
        clearTimeout(quiet);
        signal.removeEventListener("abort", finish);
        collect = undefined;
        probing = false;
        resolve({ success: true, output });
      };
      collect = (text) => {
        output.push(text);
        if (output.length >= maxLines) return finish();
        clearTimeout(quiet);
        quiet = setTimeout(finish, quietMs);
      };
      if (!write(command)) {
        collect = undefined;
        return resolve({ success: false, output: [], error: "the game server is not running" });
      }
      probing = own;
      if (!own) announce(command);
      // The first line may be long in coming (a lagging server): the quiet window starts with it.
      signal.addEventListener("abort", finish, { once: true });
    });
  }

  const enqueue =
    (own: boolean): ConsoleHandler =>
    (command, signal) => {
      const run = queue.then(() => runOne(command, signal, own));
      queue = run.catch(() => {});
      return run;
    };

  return {
    handler: enqueue(false),
    probe: enqueue(true),
    probing: () => probing,
    line(text) {
      collect?.(text);
    },
  };
}
