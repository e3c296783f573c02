/**
 * The default of `wrap --auth`: what the server's own server.properties (in the directory the
 * server runs in) says about `online-mode`. A server in offline mode cannot vouch for its players,
 * so claiming otherwise by default would be wrong; one behind an authenticating proxy is offline
 * too, and only its operator can say so (`--auth proxy`).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";

export interface AuthChoice {
  auth: "online" | "offline";
  /** Why, in a few words for the operator. */
  reason: string;
}

/** The value of `key` in a Java properties file's text (simple `key=value` lines), if present. */
export function propertyValue(text: string, key: string): string | undefined {
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (!line || line.startsWith("#") || line.startsWith("!")) continue;
    const match = /^([^=:\s]+)\s*[=:\s]\s*(.*)$/.exec(line);
    if (match && match[1] === key) return match[2].trim();
  }
  return undefined;
}

/** The auth mode server.properties in `dir` implies: offline for `online-mode=false`, else online. */
export function defaultAuth(dir: string): AuthChoice {
  let text: string;
  try {
    text = readFileSync(join(dir, "server.properties"), "utf8");
  } catch {
    return { auth: "online", reason: "no server.properties here; Minecraft's default is online-mode=true" };
  }
  const value = propertyValue(text, "online-mode");
  if (value === "false") return { auth: "offline", reason: "server.properties says online-mode=false" };
  if (value === "true") return { auth: "online", reason: "server.properties says online-mode=true" };
  return { auth: "online", reason: "server.properties does not set online-mode; Minecraft's default is true" };
}
