/** The real `outpost` command as a child process, as an operator runs it. */
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { serveNodeOptions } from "../../server/node-options.ts";

const bin = fileURLToPath(new URL("../../bin/outpost.js", import.meta.url));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `outpost <args>`; `input`, when given, is piped to its stdin (else stdin is empty). */
export function runCli(args: string[], env: Record<string, string | undefined>, input?: string): Promise<CliResult> {
  return runScript(bin, args, env, input);
}

/** Runs a script of bin/ to its end, collecting its output; `input`, when given, on its stdin. */
export function runScript(script: string, args: string[], env: Record<string, string | undefined> = {}, input?: string): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, ...args], { env: { ...process.env, ...env }, stdio: ["pipe", "pipe", "pipe"] });
    // Without input, stdin ends at once, as /dev/null would. A child that exits without reading
    // it makes the write fail (EPIPE), which is no failure of the command.
    child.stdin.on("error", () => {});
    child.stdin.end(input ?? "");
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

export interface ServeProcess {
  port: number;
  /** The Game OAuth issuer's port. */
  gamePort: number;
  child: ChildProcess;
  /** Everything it logged so far. */
  output(): string;
  /** Sends SIGTERM and resolves with the exit code. */
  stop(): Promise<number | null>;
}

/** Starts `outpost serve` and resolves once it logs that it is serving (with its port). */
export function startServe(env: Record<string, string | undefined>, timeoutMs = 30_000): Promise<ServeProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...serveNodeOptions, bin, "serve"], {
      env: { ...process.env, PORT: "0", GAME_PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "info", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    const exited = new Promise<number | null>((done) => child.on("close", (code) => done(code)));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`outpost serve did not start within ${timeoutMs} ms:\n${output}`));
    }, timeoutMs);
    const onLine = (chunk: Buffer) => {
      output += chunk;
      for (const line of output.split("\n")) {
        if (!line.includes('"Outpost is serving"')) continue;
        clearTimeout(timer);
        child.stdout.off("data", onLine);
        child.stdout.on("data", (d) => (output += d));
        resolve({
          port: JSON.parse(line).port,
          gamePort: JSON.parse(line).gamePort,
          child,
          output: () => output,
          async stop() {
            child.kill("SIGTERM");
            return exited;
          },
        });
        return;
      }
    };
    child.stdout.on("data", onLine);
    child.stderr.on("data", (d) => (output += d));
    exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`outpost serve exited with ${code} before serving:\n${output}`));
    });
  });
}
