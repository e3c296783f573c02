/**
 * What `outpost-agent wrap` tells its operator about Outpost: the connection as it comes and goes,
 * what the files panel may do here, and a refusal, loudly.
 */
import { Code, type ConnectError } from "@connectrpc/connect";
import { isFrozen, type AgentEvent, type AgentOptions } from "./client.ts";
import { visibleLine } from "../contract/one-line.ts";

/**
 * The agent's connection, as the operator reads it. What Outpost sent (the server's name, an
 * error) is shown with its control and bidirectional characters as escapes (contract/one-line.ts).
 */
export function describeEvent(event: AgentEvent, url: string, note: (message: string) => void): void {
  if (event.kind === "connected") {
    const { serverName, organizationSlug } = event.welcome;
    note(`connected to Outpost at ${url}: server "${visibleLine(serverName)}" of ${visibleLine(organizationSlug)}`);
  } else if (event.kind === "disconnected") {
    const why = isFrozen(event.error)
      ? "Outpost holds this server frozen (raise the organization's plan or delete servers to unfreeze it)"
      : event.error.code === Code.Unavailable || event.error.code === Code.DeadlineExceeded
        ? `cannot reach Outpost at ${url}`
        : "lost Outpost";
    note(`${why} (${visibleLine(event.error.rawMessage)}); trying again in ${(event.retryInMs / 1000).toFixed(1)} s. The game server keeps running.`);
  } else if (event.kind === "stopped" && event.error) {
    note(refusalNotice(event.error));
  }
}

/** What the files panel may do here, said once at start so that the operator sees what they allowed. */
export function filesNotice(files: AgentOptions["files"]): string {
  const mode = files ? (files.mode ?? "on") : "off";
  if (!files || mode === "off") return "files: off (Outpost's files panel cannot reach this server's directory)";
  const deny = files.deny?.length ? `, except ${files.deny.join(", ")}` : "";
  return `files: ${mode === "on" ? "on (list, read and change)" : "read-only (list and read)"} in ${files.root}${deny}`;
}

/** Loud, because nothing else will tell the operator that sign-ins stopped working. */
export function refusalNotice(error: ConnectError): string {
  return [
    `OUTPOST REFUSED THIS AGENT: ${visibleLine(error.rawMessage)}`,
    "The game server keeps running, but without Outpost: players cannot sign in and the dashboard cannot reach its console.",
    "Check the agent key (--key or OUTPOST_AGENT_KEY) and --auth, then restart the agent.",
  ].join("\n[outpost] ");
}
