/** The real `outpost-agent` as a child process, as a game server's operator runs it. */
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { runScript, type CliResult } from "./process.ts";

const bin = fileURLToPath(new URL("../../bin/outpost-agent.js", import.meta.url));

/** `outpost-agent <args>` to its end (simulate). */
export function runAgent(args: string[], env: Record<string, string | undefined> = {}): Promise<CliResult> {
  return runScript(bin, args, env);
}

/**
 * A player's whole in-game sign-in with `outpost-agent simulate` on `url`: the login command, then
 * their confirmation when Outpost asks for it (`--confirm`). Exit 0 once signed in.
 */
export function signInInGame(url: string, key: string, player: { name: string; uuid: string }, command: string): Promise<CliResult> {
  return runAgent(["simulate", "--url", url, "--key", key, "--player-name", player.name, "--player-uuid", player.uuid, "--confirm", "--", command]);
}

export interface AgentProcess {
  child: ChildProcess;
  /** Everything it printed so far (stdout and stderr). */
  output(): string;
  /** Resolves with the match once its output after position `since` matches. */
  waitFor(pattern: RegExp, since?: number, timeoutMs?: number): Promise<RegExpExecArray>;
  /** Writes a line to its console. */
  send(line: string): void;
  /** Its exit code, once it exits. */
  exited: Promise<number | null>;
  /** Stops it (SIGTERM, or the signal given) and resolves with its exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts `outpost-agent run <args>`; its console is the returned `send`. */
export function startAgentRun(args: string[], env: Record<string, string | undefined> = {}): AgentProcess {
  return startAgentProcess(["run", ...args], env);
}

/** Starts `outpost-agent <args>` (in `cwd`, default this process's); its stdin is the returned `send`. */
export function startAgentProcess(args: string[], env: Record<string, string | undefined> = {}, cwd?: string): AgentProcess {
  const child = spawn(process.execPath, [bin, ...args], { env: { ...process.env, ...env }, stdio: ["pipe", "pipe", "pipe"], cwd });
  let output = "";
  const waiters = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    output += chunk;
    for (const check of waiters) check();
  };
  child.stdout!.on("data", onData);
  child.stderr!.on("data", onData);
  const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
  return {
    child,
    output: () => output,
    exited,
    waitFor(pattern, since = 0, timeoutMs = 15_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => done(new Error(`no ${pattern} in the agent's output within ${timeoutMs} ms:\n${output}`)), timeoutMs);
        const check = () => {
          const match = pattern.exec(output.slice(since));
          if (match) done(match);
        };
        const done = (result: RegExpExecArray | Error) => {
          clearTimeout(timer);
          waiters.delete(check);
          if (result instanceof Error) reject(result);
          else resolve(result);
        };
        waiters.add(check);
        check();
      });
    },
    send(line) {
      child.stdin!.write(`${line}\n`);
    },
    async stop(signal = "SIGTERM") {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}
