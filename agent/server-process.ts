/**
 * The wrapped game server as a child process: its console is a pipe the agent writes whole lines
 * to (the operator's, tellraw answers, Outpost's console commands, `stop`), so no two writers'
 * text can mix within a line. It runs in a process group of its own, so that a Ctrl-C in the
 * operator's terminal reaches the agent alone and the server stops once, by `stop`, and so that a
 * kill reaches whatever the server command started (a start script and its java).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { constants } from "node:os";

export interface ServerProcess {
  child: ChildProcess;
  /** Writes one line to the server's console; false when the server is not there to take it. */
  writeLine(line: string): boolean;
  /** Signals the server's process group: SIGKILL (the default) ends it at once. */
  kill(signal?: NodeJS.Signals): void;
  /** Whether the server still runs. */
  running(): boolean;
  /** Its exit status once it has exited and its output is read: the code, or 128 + a signal's number. */
  readonly exited: Promise<ServerExit>;
}

export interface ServerExit {
  status: number;
  /** How it ended, for the operator: "exit code 0", "signal SIGKILL", "could not start: …". */
  how: string;
}

/** How long the output may trail the exit (a grandchild holding the pipe must not hold the agent). */
const outputTrailMs = 1_000;

/** The exit status a shell would report: the code, or 128 + the signal's number. */
export function exitStatus(code: number | null, signal: NodeJS.Signals | null): number {
  if (code !== null) return code;
  return 128 + (signal ? (constants.signals[signal] ?? 0) : 0);
}

export function startServerProcess(command: string[]): ServerProcess {
  const child = spawn(command[0], command.slice(1), { stdio: ["pipe", "pipe", "pipe"], detached: true });
  let alive = true;
  // A write after the server exited fails with EPIPE; the exit is what reports it.
  child.stdin!.on("error", () => {});

  const exited = new Promise<ServerExit>((resolve) => {
    child.once("error", (error: NodeJS.ErrnoException) => {
      if (child.pid !== undefined) return; // An error of a running child (a failed kill): not its end.
      alive = false;
      const status = error.code === "ENOENT" ? 127 : 126;
      resolve({ status, how: `could not start "${command[0]}": ${error.message}` });
    });
    child.once("exit", (code, signal) => {
      alive = false;
      const result = { status: exitStatus(code, signal), how: code !== null ? `exit code ${code}` : `signal ${signal}` };
      const trail = setTimeout(() => resolve(result), outputTrailMs);
      child.once("close", () => (clearTimeout(trail), resolve(result)));
    });
  });

  return {
    child,
    exited,
    running: () => alive,
    writeLine(line) {
      if (!alive || !child.stdin!.writable) return false;
      if (/[\r\n]/.test(line)) throw new Error("a console line cannot hold a line break");
      child.stdin!.write(`${line}\n`);
      return true;
    },
    kill(signal = "SIGKILL") {
      if (!alive || child.pid === undefined) return;
      try {
        process.kill(-child.pid, signal);
      } catch {
        child.kill(signal);
      }
    },
  };
}
