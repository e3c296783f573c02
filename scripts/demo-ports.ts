/**
 * The demo's ports: each is checked before anything starts, so a port already taken (most often
 * by an Outpost that `npm start` left running) is named with what holds it and the variable that
 * moves the demo elsewhere, instead of a child process dying with a log nobody reads.
 */
import { createServer } from "node:net";

export interface DemoPort {
  port: number;
  /** The environment variable that sets it. */
  variable: string;
  /** What the demo runs on it. */
  purpose: string;
}

/** Whether `host:port` cannot be listened on because something else holds it (EADDRINUSE). */
function portTaken(port: number, host: string): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", (error: NodeJS.ErrnoException) => (error.code === "EADDRINUSE" ? resolve(true) : reject(error)));
    probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve(false)));
  });
}

/**
 * What answers on a taken port, as far as one request can tell: Outpost's listeners answer
 * GET /healthz with {"status":"ok"}.
 */
async function holderOf(port: number, host: string): Promise<string> {
  try {
    const res = await fetch(`http://${host}:${port}/healthz`, { signal: AbortSignal.timeout(1000) });
    const body = (await res.json()) as { status?: unknown };
    if (res.ok && body.status === "ok") return "another Outpost (npm start?) is using it";
  } catch {
    // Not HTTP, not JSON, or no answer in time: something else.
  }
  return "another program is using it";
}

/** The line that says a port is taken, by what, and how to move the demo off it. */
export function portTakenMessage(taken: DemoPort, holder: string): string {
  return `port ${taken.port} (${taken.purpose}) is in use (EADDRINUSE): ${holder}; stop it or set ${taken.variable}, e.g. ${taken.variable}=${taken.port + 100} npm run demo`;
}

/** One line per port of `ports` that is taken on `host`; none when all are free. */
export async function takenPortMessages(ports: readonly DemoPort[], host: string): Promise<string[]> {
  const messages: string[] = [];
  for (const candidate of ports) {
    if (await portTaken(candidate.port, host)) messages.push(portTakenMessage(candidate, await holderOf(candidate.port, host)));
  }
  return messages;
}

/**
 * The port of an EADDRINUSE in a child's output ("listen EADDRINUSE: address already in use
 * 127.0.0.1:3000"): a port taken after the check, or one the demo does not choose (METRICS_PORT).
 */
export function portInUseIn(output: string): number | undefined {
  const match = /EADDRINUSE\b.*:(\d+)\s*$/m.exec(output);
  return match ? Number(match[1]) : undefined;
}
