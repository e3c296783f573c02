/**
 * flying-squid's console for the Outpost agent: console commands from Outpost run on the server's
 * own command registry, as an operator typing them at its console would, and the lines they print
 * are the command's output; every line the console prints also goes to Outpost's live console.
 *
 * flying-squid prints everything through `serv.log` (info, warn and err go through it), so that
 * one function is wrapped. Which lines belong to which command is told by AsyncLocalStorage: a
 * command runs inside its own store, so what it prints (directly or in the promises it awaits) is
 * its own, and what players do meanwhile is not.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { ConsoleHandler, ConsoleRun } from "./console.ts";

/** What the console side uses of a flying-squid server (its MCServer). */
export interface SquidConsoleServer {
  /** Set by flying-squid's log plugin, which loads after plugins named in the `plugins` setting. */
  log?: (message: string) => void;
  info(message: string): void;
  err(message: string): void;
  commands: { use(command: string, ctx?: object, op?: boolean): Promise<string | undefined> };
  once(event: "asap", listener: () => void): unknown;
}

export interface SquidConsole {
  /** The agent's console handler. */
  run: ConsoleHandler;
  /** Puts flying-squid's own `serv.log` back. */
  close(): void;
}

/** Colour escapes (the `colors` package's) have no place in a line shown on a web page. */
const ansi = /\x1b\[[0-9;]*[A-Za-z]/g;

export function plainLine(message: string): string {
  return message.replace(ansi, "");
}

/** Wraps `serv.log` (now, or once flying-squid has set it up) and passes each line to `onLine`. */
export function watchSquidConsole(serv: SquidConsoleServer, onLine: (line: string) => void): SquidConsole {
  const capture = new AsyncLocalStorage<string[]>();
  let original: ((message: string) => void) | undefined;
  const wrapped = (message: string) => {
    original!(message);
    const line = plainLine(message);
    capture.getStore()?.push(line);
    onLine(line);
  };
  const wrap = () => {
    if (original || !serv.log) return;
    original = serv.log;
    serv.log = wrapped;
  };
  if (serv.log) wrap();
  else serv.once("asap", wrap);
  return {
    run: (command, signal) => runCommand(serv, capture, command, signal),
    close() {
      if (serv.log === wrapped) serv.log = original;
    },
  };
}

/**
 * Runs one command as flying-squid's console does (`serv.handleCommand`: the result printed as
 * info, a user error such as "Command not found" printed as an error, which still counts as run),
 * collecting what it printed until it ends or `signal` aborts.
 */
async function runCommand(serv: SquidConsoleServer, capture: AsyncLocalStorage<string[]>, command: string, signal: AbortSignal): Promise<ConsoleRun> {
  const output: string[] = [];
  const ran = capture.run(output, async (): Promise<Omit<ConsoleRun, "output">> => {
    try {
      const result = await serv.commands.use(command);
      if (result) serv.info(result);
      return { success: true };
    } catch (error) {
      const message = (error as Error)?.message || String(error);
      if ((error as { userError?: boolean })?.userError) {
        serv.err(message);
        return { success: true };
      }
      serv.err(`the command failed: ${message}`);
      return { success: false, error: `the command failed: ${message}` };
    }
  });
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<Omit<ConsoleRun, "output">>((resolve) => {
    onAbort = () => resolve({ success: true });
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
  });
  try {
    const result = await Promise.race([ran, aborted]);
    return { ...result, output: [...output] };
  } finally {
    signal.removeEventListener("abort", onAbort!);
  }
}
