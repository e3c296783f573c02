/**
 * Searching a server's files (servers/searchFiles): the lines holding a text in the text files
 * under a folder, found by the server's agent within its bounds (agent/files/search.ts). A read
 * (files_read), through the same three checks as every files procedure (file-methods.ts). A member
 * searches a folder their grant reaches, or one on the way to it, and hears only of the files
 * their grant allows: the agent knows nothing of grants, so core leaves the others out.
 */
import { create } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { SearchFilesResponseSchema, type SearchFilesRequest, type ServersService } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { filePath, resultOf, runFileCall, type FileDeps } from "./file-methods.ts";

type ServersImpl = ServiceImpl<typeof ServersService>;

/** Lines answered when the request names no max_results. */
export const defaultSearchResults = 100;

/** searchFiles, for ServersService to spread in. */
export function searchMethods(deps: FileDeps): Pick<ServersImpl, "searchFiles"> {
  return { searchFiles: (req, ctx) => searchFiles(deps, req, ctx) };
}

export async function searchFiles(deps: FileDeps, req: SearchFilesRequest, ctx: HandlerContext) {
  const path = filePath(req.path);
  const value = { path, query: req.query, maxResults: req.maxResults ?? defaultSearchResults, caseSensitive: req.caseSensitive ?? false };
  // `browsing`: the folder is one the member's grant reaches, or leads to what it reaches.
  const outcome = await runFileCall(deps, req, ctx, { access: "read", paths: [path], browsing: true, operation: { case: "search", value } });
  const found = resultOf(outcome, "matches");
  const matches = found.matches.filter((match) => outcome.access.allows(match.path));
  return create(SearchFilesResponseSchema, { matches, truncated: found.truncated });
}
