/**
 * The process's log: JSON lines, one object each (what log collectors read), or the same records
 * printed readably by pino-pretty when stdout is a terminal (someone running `npm start`).
 */
import { pino, type Logger, type LevelWithSilent } from "pino";
import pretty from "pino-pretty";

export function createLogger(level: LevelWithSilent, stdout: NodeJS.WriteStream = process.stdout): Logger {
  if (!stdout.isTTY) return pino({ level });
  // Synchronous, as pino's own stdout is: a line logged just before the process exits is printed.
  return pino({ level }, pretty({ destination: stdout, sync: true, colorize: stdout.hasColors?.() ?? false }));
}
