/**
 * The tools the model may call, as it sees them (names without dots, JSON Schema arguments), each
 * tied to a tool of the gate's catalogue (core/ocelot/tools.ts); the files tools are in
 * file-tools.ts. `parse` checks the model's arguments and says what the call will do (the summary
 * the gate records and, for a command, the text a person confirms: exactly what runs); `run` does
 * it with the caller's own access and returns data for the model. Nothing here decides
 * permissions: the gate does, before `run`.
 */
import { create } from "@bufbuild/protobuf";
import { ExecuteConsoleCommandRequestSchema } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { accessibleServers, requireServer, visibleServerIds } from "../access.ts";
import { fail } from "../errors.ts";
import { isOnline } from "../agents/presence.ts";
import { storedPlayers } from "../agents/players.ts";
import { searchNotes } from "../knowledge/search.ts";
import { findNote } from "../knowledge/note-queries.ts";
import { consoleCommandText, executeConsoleCommand } from "../servers/console-methods.ts";
import type { ModelTool } from "./model.ts";
import { isUuid } from "../../contract/uuid.ts";
import { count, serverOf, serverParam, text, type ChatTool } from "./tool-definition.ts";
import { fileTools } from "./file-tools.ts";
import { serverTools } from "./server-tools.ts";

const catalogue: ChatTool[] = [
  {
    name: "knowledge_search",
    gateTool: "knowledge.search",
    description: "Full-text search of the organization's knowledge base (notes and runbooks). Returns the best matches with snippets.",
    parameters: {
      type: "object",
      properties: { query: { type: "string", description: "Words to look for" }, limit: { type: "integer", minimum: 1, maximum: 10 } },
      required: ["query"],
    },
    parse: (args) => {
      const query = text(args, "query", 500);
      return { summary: query, input: { query, limit: count(args, "limit", 5, 10) } };
    },
    async run(env, call) {
      const visible = await visibleServerIds(env.db.query, env.caller, env.access, env.deps.clock.now());
      const hits = await searchNotes(env.db.query, {
        organizationId: env.access.organization.id,
        visible,
        text: String(call.input.query),
        limit: Number(call.input.limit),
      });
      return {
        notes: hits.map((h) => ({ note_id: h.id, title: h.title, tags: h.tags, server_id: h.server_id, snippet: h.snippet.map((s) => s.text).join("") })),
      };
    },
  },
  {
    name: "knowledge_read",
    gateTool: "knowledge.read",
    description: "Reads one note of the knowledge base, whole, by its id (from knowledge_search).",
    parameters: { type: "object", properties: { note_id: { type: "string" } }, required: ["note_id"] },
    parse: (args) => {
      const noteId = text(args, "note_id", 64);
      if (!isUuid(noteId)) throw fail("invalid_argument", "note_id: a note's id from knowledge_search is needed");
      return { summary: noteId, input: { noteId } };
    },
    async run(env, call) {
      const visible = await visibleServerIds(env.db.query, env.caller, env.access, env.deps.clock.now());
      const note = await findNote(env.db.query, env.access.organization.id, String(call.input.noteId), visible);
      if (!note) throw fail("not_found", "no such note (or not one you can see)");
      return { note_id: note.id, title: note.title, tags: note.tags, server_id: note.server_id, content: note.content.slice(0, 6000) };
    },
  },
  {
    name: "servers_list",
    gateTool: "servers.list",
    description: "Lists the organization's servers the user can see, with their ids and whether their agents are connected.",
    parameters: { type: "object", properties: {} },
    parse: () => ({ summary: "", input: {} }),
    async run(env) {
      const now = env.deps.clock.now();
      const servers = await accessibleServers(env.db, env.caller, env.access, now);
      return { servers: servers.slice(0, 100).map((s) => ({ server_id: s.id, name: s.name, game: s.game, online: isOnline(s, now), players: s.playerCount })) };
    },
  },
  {
    name: "players_list",
    gateTool: "players.list",
    description: "Lists the players online on a server.",
    parameters: { type: "object", properties: { ...serverParam } },
    parse: (args, scope) => ({ serverId: serverOf(args, scope), summary: "", input: {} }),
    async run(env, call) {
      const { server } = await requireServer(
        env.db,
        env.caller,
        { serverId: call.serverId!, organizationId: env.access.organization.id },
        { action: "view", now: env.deps.clock.now(), plans: env.deps.config.plans },
      );
      const players = isOnline(server, env.deps.clock.now()) ? await storedPlayers(env.db.query, server.id) : [];
      return { server: server.name, players: players.slice(0, 200).map((p) => ({ name: p.name, uuid: p.uuid })) };
    },
  },
  {
    name: "console_read",
    gateTool: "console.read",
    description: "Reads the most recent lines of a server's console output.",
    parameters: { type: "object", properties: { ...serverParam, lines: { type: "integer", minimum: 1, maximum: 100 } } },
    parse: (args, scope) => {
      const lines = count(args, "lines", 50, 100);
      return { serverId: serverOf(args, scope), summary: `last ${lines} lines`, input: { lines } };
    },
    async run(env, call) {
      // Reading a console is an acting call: it spends one of a grant's uses, as opening the live console does.
      const { server } = await requireServer(
        env.db,
        env.caller,
        { serverId: call.serverId!, organizationId: env.access.organization.id },
        { action: "console_read", now: env.deps.clock.now(), plans: env.deps.config.plans },
      );
      if (!isOnline(server, env.deps.clock.now()) || !server.agentConnectionId) return { server: server.name, online: false, lines: [] };
      const holder = env.deps.agents.holding(server.agentConnectionId);
      if (!holder) return { server: server.name, online: true, lines: [], note: "the recent output is kept by another Outpost instance and cannot be read from here" };
      return { server: server.name, online: true, lines: holder.console.recent().slice(-Number(call.input.lines)) };
    },
  },
  {
    name: "console_command",
    gateTool: "console.command",
    description: 'Runs one command on a server\'s console (e.g. "list", "say hello"). The user confirms each command before it runs.',
    parameters: {
      type: "object",
      properties: { ...serverParam, command: { type: "string", description: "The command, without a leading slash" } },
      required: ["command"],
    },
    parse: (args, scope) => {
      const typed = text(args, "command", 1000);
      // What the console receives: the summary a person confirms is exactly what runs.
      return { serverId: serverOf(args, scope), summary: consoleCommandText(typed), input: { command: typed } };
    },
    async run(env, call) {
      const answer = await executeConsoleCommand(
        env.deps,
        create(ExecuteConsoleCommandRequestSchema, { serverId: call.serverId!, command: String(call.input.command) }),
        env.ctx,
      );
      return { command: call.summary, success: answer.success, output: answer.output.slice(-100), ...(answer.error ? { error: answer.error } : {}) };
    },
  },
];

export const chatTools: ReadonlyMap<string, ChatTool> = new Map([...catalogue, ...fileTools, ...serverTools].map((t) => [t.name, t]));

/** The tool as offered to the model. */
export function offered(tool: ChatTool): ModelTool {
  return { type: "function", function: { name: tool.name, description: tool.description, parameters: tool.parameters } };
}
