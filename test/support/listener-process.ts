/** edge/listen.ts in a child process (test/support/listener-main.ts). */
import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { ListenOptions } from "../../edge/listen.ts";

const main = fileURLToPath(new URL("./listener-main.ts", import.meta.url));

export interface ListenerProcess {
  port: number;
  child: ChildProcess;
  /** Ends it (SIGKILL: a stuck event loop does not act on SIGTERM). */
  stop(): Promise<void>;
}

export function startListenerProcess(options: ListenOptions): Promise<ListenerProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [main, JSON.stringify(options)], { stdio: ["ignore", "pipe", "inherit"] });
    const exited = new Promise<void>((done) => child.once("close", () => done()));
    child.once("error", reject);
    child.stdout.once("data", (chunk: Buffer) =>
      resolve({
        port: Number(String(chunk).trim()),
        child,
        async stop() {
          child.kill("SIGKILL");
          await exited;
        },
      }),
    );
  });
}
