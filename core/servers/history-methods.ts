/**
 * A file's history (servers/listFileHistory, restoreFileVersion): the versions the server's agent
 * kept as Outpost replaced or deleted the file (agent/files/history.ts), and writing one back. The
 * same three checks as every files procedure (file-methods.ts): listing is files_read at the path,
 * restoring files_write there (it is a write, and spends a member's use as one), and a restore is
 * an activity event with the version it brought back.
 */
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import {
  ListFileHistoryResponseSchema,
  RestoreFileVersionResponseSchema,
  type ListFileHistoryRequest,
  type RestoreFileVersionRequest,
  type ServersService,
} from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { filePath, recordChange, resultOf, runFileCall, type FileDeps } from "./file-methods.ts";

type ServersImpl = ServiceImpl<typeof ServersService>;

/** listFileHistory and restoreFileVersion, for ServersService to spread in. */
export function historyMethods(deps: FileDeps): Pick<ServersImpl, "listFileHistory" | "restoreFileVersion"> {
  return {
    listFileHistory: (req, ctx) => listFileHistory(deps, req, ctx),
    restoreFileVersion: (req, ctx) => restoreFileVersion(deps, req, ctx),
  };
}

export async function listFileHistory(deps: FileDeps, req: ListFileHistoryRequest, ctx: HandlerContext) {
  const path = filePath(req.path);
  const outcome = await runFileCall(deps, req, ctx, { access: "read", paths: [path], operation: { case: "listHistory", value: { path } } });
  return create(ListFileHistoryResponseSchema, { versions: resultOf(outcome, "history").versions });
}

export async function restoreFileVersion(deps: FileDeps, req: RestoreFileVersionRequest, ctx: HandlerContext) {
  const path = filePath(req.path);
  const { versionId, expectedSha256 } = req;
  const outcome = await runFileCall(deps, req, ctx, {
    access: "write",
    paths: [path],
    operation: { case: "restoreVersion", value: { path, versionId, expectedSha256 } },
  });
  const written = resultOf(outcome, "written");
  await recordChange(deps, outcome, "server.file_restored", { path: written.path, versionId, size: String(written.size), sha256: written.sha256 });
  return create(RestoreFileVersionResponseSchema, {
    path: written.path,
    size: written.size,
    sha256: written.sha256,
    modifiedAt: written.modifiedAt ?? timestampFromDate(deps.clock.now()),
  });
}
