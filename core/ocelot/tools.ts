/**
 * The assistant's tool catalogue: every tool it may call, in one table. A tool's family is the
 * switch owners and admins turn it on and off with; its weight is what it costs of the day's
 * tool-action quota; `confirm` says whether a person must allow each use (unless break-glass is
 * on); `access` is what the caller must be allowed to do themselves, so the assistant never does
 * more than the person asking could. The gate (gate.ts) reads nothing else about a tool.
 */

/** The families of tools, as OcelotConfig's ToolFamilies names them. */
export const toolFamilies = ["console_read", "console_command", "players", "knowledge_read", "knowledge_write", "server_lifecycle", "files"] as const;
export type ToolFamily = (typeof toolFamilies)[number];

/**
 * What the caller must be allowed: an action on the tool's server (the names of the per-action
 * server grants), or a role in the organization for tools that target none. A files tool names a
 * path too, which must be within the caller's file paths as the files procedures judge them: a
 * `file` the grant allows, or a `folder` the grant reaches (searched, it shows only what it allows).
 */
export type ToolAccess =
  | { server: "view" | "console_read" | "console_command" | "manage_players" | "lifecycle" }
  | { server: "files_read" | "files_write"; path: "file" | "folder" }
  | { role: "member" | "manager" };

export interface ToolSpec {
  family: ToolFamily;
  /** Units of the day's tool-action quota one use reserves. */
  weight: number;
  /** A person confirms each use (ConfirmToolAction) unless break-glass is on. */
  confirm: boolean;
  access: ToolAccess;
}

const catalogue = {
  "console.read": { family: "console_read", weight: 1, confirm: false, access: { server: "console_read" } },
  "console.command": { family: "console_command", weight: 2, confirm: true, access: { server: "console_command" } },
  "players.list": { family: "players", weight: 1, confirm: false, access: { server: "view" } },
  "knowledge.search": { family: "knowledge_read", weight: 1, confirm: false, access: { role: "member" } },
  "knowledge.read": { family: "knowledge_read", weight: 1, confirm: false, access: { role: "member" } },
  "servers.list": { family: "players", weight: 1, confirm: false, access: { role: "member" } },
  "knowledge.write": { family: "knowledge_write", weight: 1, confirm: false, access: { role: "manager" } },
  "files.read": { family: "files", weight: 1, confirm: false, access: { server: "files_read", path: "file" } },
  "files.search": { family: "files", weight: 1, confirm: false, access: { server: "files_read", path: "folder" } },
  "files.write": { family: "files", weight: 2, confirm: true, access: { server: "files_write", path: "file" } },
  "servers.stats": { family: "players", weight: 1, confirm: false, access: { server: "view" } },
  "servers.restart": { family: "server_lifecycle", weight: 2, confirm: true, access: { server: "lifecycle" } },
} as const satisfies Record<string, ToolSpec>;

export type ToolName = keyof typeof catalogue;

/** Every tool with its spec (for the docs and tests). */
export const tools: ReadonlyMap<string, ToolSpec> = new Map(Object.entries(catalogue));

/** Whether the tool acts on one server (its requests must name it). */
export function targetsServer(spec: ToolSpec): spec is ToolSpec & { access: { server: string } } {
  return "server" in spec.access;
}
