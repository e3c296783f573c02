/**
 * The assistant's files tools (the `files` family): read_file, search_files and propose_file_edit,
 * through the same code as servers/readFile, servers/searchFiles and servers/writeFile. So the
 * caller's own access holds, their grant's file paths included (which the gate judges first), as
 * do the agent operator's choice and the agent's sandbox; a change is the `server.file_written`
 * event it always is. A change is proposed as the line diff from the version read; a person
 * allows it, and only then is it written, and only over that version.
 */
import { createHash } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { ReadFileRequestSchema, SearchFilesRequestSchema, SearchFilesResponseSchema, WriteFileRequestSchema } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { notOnOneLine } from "../../contract/one-line.ts";
import { DomainError, fail } from "../errors.ts";
import { filePath, maxFileBytes, readFile, writeFile } from "../servers/file-methods.ts";
import { createServersService } from "../servers/servers-service.ts";
import { applyUnifiedEdit, excerpt, lineDiff, maxDiffChars, maxSpanLines } from "./file-text.ts";
import { count, serverOf, serverParam, text, type CallPreview, type ChatTool, type ParsedCall, type ToolEnv } from "./tool-definition.ts";

/** Lines search_files asks for, and how much of each it gives the model. */
const searchResults = 40;
const matchChars = 200;
/** The most of the matches one result holds, counted as JSON (a tool's result is cut at 8,000: prompt.ts). */
const searchBudget = 6_000;

const sha256 = (content: string) => createHash("sha256").update(content, "utf8").digest("hex");

const pathParam = (what: string) => ({ type: "string", description: `${what}, relative to the server's directory, with / between folders` });

/** A file's path from the model: the normalized form the files procedures use, or their refusal. */
const pathOf = (args: Record<string, unknown>) => filePath(text(args, "path", 4096));

/** A file as text, with the version it was read at: what a change is made from. */
async function readText(env: ToolEnv, call: ParsedCall): Promise<{ content: string; sha256: string }> {
  const file = await readFile(env.deps, create(ReadFileRequestSchema, { serverId: call.serverId!, path: call.path! }), env.ctx);
  if (file.encoding !== "utf8") throw fail("failed_precondition", `${file.path} is not a text file; the assistant changes text files only`);
  return { content: file.content, sha256: file.sha256 };
}

/** What the call would write over `current`: its whole new content, or its patch applied. */
function changed(current: string, call: ParsedCall): string {
  if (typeof call.input.content === "string") return call.input.content;
  const applied = applyUnifiedEdit(current, String(call.input.patch));
  if ("problem" in applied) throw fail("invalid_argument", applied.problem);
  return applied.after;
}

const conflict = (path: string) => fail("edit_conflict", `not written: ${path} changed since the diff was made (or is gone); read it again and propose the change anew`);

const readFileTool: ChatTool = {
  name: "read_file",
  gateTool: "files.read",
  description: "Reads a text file on a server (a config, a log). Long files come in parts: the result says which lines it holds and where to go on (start_line).",
  parameters: {
    type: "object",
    properties: { ...serverParam, path: pathParam("The file's path"), start_line: { type: "integer", minimum: 1, description: "The first line to read (default 1)" } },
    required: ["path"],
  },
  parse: (args, scope) => {
    const path = pathOf(args);
    const startLine = count(args, "start_line", 1, Number.MAX_SAFE_INTEGER);
    return { serverId: serverOf(args, scope), path, summary: startLine > 1 ? `${path} from line ${startLine}` : path, input: { startLine } };
  },
  async run(env, call) {
    let file;
    try {
      file = await readFile(env.deps, create(ReadFileRequestSchema, { serverId: call.serverId!, path: call.path! }), env.ctx);
    } catch (error) {
      if (error instanceof DomainError && error.reason === "too_large")
        return { path: call.path, too_large: true, note: `larger than ${maxFileBytes} bytes: too large to read` };
      throw error;
    }
    const facts = { path: file.path, size: Number(file.size), sha256: file.sha256 };
    if (file.encoding !== "utf8") return { ...facts, binary: true, note: "not a text file: its content is not shown" };
    const part = excerpt(file.content, Number(call.input.startLine));
    const note = part.lineCut
      ? `line ${part.endLine} is too long to show whole: only its beginning is here`
      : part.truncated
        ? `cut to fit: lines ${part.startLine} to ${part.endLine} of ${part.totalLines}; read on with start_line ${part.endLine + 1}`
        : part.startLine > part.totalLines && part.totalLines > 0
          ? `the file has ${part.totalLines} lines`
          : undefined;
    return {
      ...facts,
      total_lines: part.totalLines,
      start_line: part.startLine,
      end_line: part.endLine,
      content: part.content,
      truncated: part.truncated,
      ...(note && { note }),
    };
  },
};

const searchFilesTool: ChatTool = {
  name: "search_files",
  gateTool: "files.search",
  description: "Finds the lines holding a text in the text files under a folder of a server (case-insensitive), with their paths and line numbers.",
  parameters: {
    type: "object",
    properties: {
      ...serverParam,
      path: pathParam('The folder to search under ("" for the whole directory)'),
      query: { type: "string", description: "The text to look for, on one line" },
    },
    required: ["query"],
  },
  parse: (args, scope) => {
    const path = args.path === undefined || args.path === "" ? "" : pathOf(args);
    const query = text(args, "query", 200);
    if (notOnOneLine.test(query)) throw fail("invalid_argument", "query: one line of text without control characters is needed");
    return { serverId: serverOf(args, scope), path, summary: `${JSON.stringify(query)} under ${path || "."}`, input: { query } };
  },
  async run(env, call) {
    // The procedure as it is registered, from whichever module holds it.
    const request = create(SearchFilesRequestSchema, { serverId: call.serverId!, path: call.path!, query: String(call.input.query), maxResults: searchResults });
    const found = create(SearchFilesResponseSchema, await createServersService(env.deps).searchFiles(request, env.ctx));
    const matches: Array<{ path: string; line_number: number; line: string }> = [];
    let used = 0;
    for (const m of found.matches) {
      const match = { path: m.path, line_number: m.lineNumber, line: m.line.length > matchChars ? `${m.line.slice(0, matchChars)}…` : m.line };
      used += JSON.stringify(match).length;
      if (used > searchBudget) break;
      matches.push(match);
    }
    const truncated = found.truncated || matches.length < found.matches.length;
    return {
      path: call.path || ".",
      query: call.input.query,
      matches,
      truncated,
      ...(truncated && { note: "more lines match than are shown: search a narrower folder or a longer text" }),
    };
  },
};

const proposeFileEditTool: ChatTool = {
  name: "propose_file_edit",
  gateTool: "files.write",
  description:
    "Proposes a change to a text file on a server: either its whole new content, or a unified diff (patch) against the file as read_file gave it. The user is shown the line diff, and the file is written only once they allow it, and only if it has not changed meanwhile.",
  parameters: {
    type: "object",
    properties: {
      ...serverParam,
      path: pathParam("The file's path"),
      content: { type: "string", description: "The whole new content of the file" },
      patch: { type: "string", description: "Or: a unified diff of this one file (@@ hunks with 3 lines of context)" },
    },
    required: ["path"],
  },
  parse: (args, scope) => {
    const path = pathOf(args);
    const [content, patch] = [args.content, args.patch];
    if ((content === undefined) === (patch === undefined))
      throw fail("invalid_argument", "give either content (the whole new file) or patch (a unified diff), one of them");
    if (content !== undefined && (typeof content !== "string" || Buffer.byteLength(content) > maxFileBytes))
      throw fail("invalid_argument", `content: the file's new text, at most ${maxFileBytes} bytes`);
    const input: Record<string, string> = content !== undefined ? { content: content as string } : { patch: text(args, "patch", 100_000) };
    return { serverId: serverOf(args, scope), path, summary: path, input };
  },
  async preview(env, call): Promise<CallPreview> {
    const current = await readText(env, call);
    const after = changed(current.content, call);
    if (after === current.content) throw fail("failed_precondition", `${call.path} already holds exactly this: nothing to change`);
    const shown = await lineDiff(call.path!, current.content, after);
    if (!shown)
      throw fail(
        "failed_precondition",
        `the change is too large to show for allowing (a diff is at most ${maxDiffChars} characters, its changes within ${maxSpanLines} lines): propose it in smaller parts`,
      );
    return {
      file_edit: {
        path: call.path!,
        sha256: current.sha256,
        new_sha256: sha256(after),
        diff: shown.diff,
        lines_added: shown.added,
        lines_removed: shown.removed,
      },
    };
  },
  async run(env, call) {
    const edit = call.preview?.file_edit;
    if (!edit || edit.path !== call.path) throw fail("failed_precondition", "not written: no change was shown for this call");
    let after: string;
    if (typeof call.input.content === "string") after = call.input.content;
    else {
      const current = await readText(env, call);
      if (current.sha256 !== edit.sha256) throw conflict(edit.path);
      after = changed(current.content, call);
    }
    if (sha256(after) !== edit.new_sha256) throw fail("failed_precondition", "not written: the change differs from the one shown");
    try {
      const request = create(WriteFileRequestSchema, { serverId: call.serverId!, path: edit.path, content: after, expectedSha256: edit.sha256 });
      const written = await writeFile(env.deps, request, env.ctx);
      return { path: written.path, written: true, size: Number(written.size), sha256: written.sha256, lines_added: edit.lines_added, lines_removed: edit.lines_removed };
    } catch (error) {
      if (error instanceof DomainError && error.reason === "edit_conflict") throw conflict(edit.path);
      throw error;
    }
  },
};

/** The files family's tools, in the order they are offered. */
export const fileTools: readonly ChatTool[] = [readFileTool, searchFilesTool, proposeFileEditTool];
