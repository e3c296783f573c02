/**
 * What every page of a server's files shares: where things are (the browser, the editor, the raw
 * download), what the viewer may do there (as far as the page can tell: core decides each call),
 * and core's refusals in words a page can show.
 */
import type { Context } from "koa";
import { Code, ConnectError } from "@connectrpc/connect";
import { ServerAction, type Organization } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { FilesMode, type Server } from "../../gen/outpost/servers/v1/resources_pb.js";
import { ErrorInfoSchema } from "../../gen/outpost/errors/v1/errors_pb.js";
import { isUnexplainedFailure } from "../errors.ts";
import { connectCodeName, failureHttpStatus } from "../../contract/http-status.ts";
import { orgOf, type Viewer } from "./context.ts";
import { canManage } from "./format.ts";
import { html, type Html } from "../html.ts";
import { orgPath } from "./paths.ts";

/** The path of a server's files page (`rest`: "", "/edit", "/upload"…), with `query` if any. */
export function filesPath(org: Organization, serverId: string, rest = "", query?: Record<string, string>): string {
  const search = query ? `?${new URLSearchParams(query)}` : "";
  return orgPath(org, `/servers/${serverId}/files${rest}${search}`);
}

/** The browser at folder `path` ("" for the server's directory). */
export function folderHref(org: Organization, serverId: string, path: string): string {
  return filesPath(org, serverId, "", path ? { path } : undefined);
}

/** The file's bytes as they are, from the HTTP API (GET servers/downloadFile, a raw body). */
export function downloadHref(serverId: string, path: string): string {
  return `/api/http/servers/downloadFile?${new URLSearchParams({ serverId, path })}`;
}

/** `name` in folder `folder`. */
export function childPath(folder: string, name: string): string {
  return folder ? `${folder}/${name}` : name;
}

/** The folder holding `path` ("" for the server's directory). */
export function parentOf(path: string): string {
  const slash = path.lastIndexOf("/");
  return slash < 0 ? "" : path.slice(0, slash);
}

/** The last part of `path`. */
export function baseName(path: string): string {
  return path.slice(path.lastIndexOf("/") + 1);
}

/** A path as the pages show it: the server's directory has a name of its own. */
export function shownPath(path: string): string {
  return path || "the server's directory";
}

/** The folders from the server's directory down to `path`, each a link but the last. */
export function folderTrail(org: Organization, serverId: string, path: string, linkLast = false): Html {
  const parts = path ? path.split("/") : [];
  const steps = [{ label: "Server directory", path: "" }, ...parts.map((part, i) => ({ label: part, path: parts.slice(0, i + 1).join("/") }))];
  const items = steps.map((step, i) =>
    i === steps.length - 1 && !linkLast
      ? html`<li><span aria-current="location">${step.label}</span></li>`
      : html`<li><a href="${folderHref(org, serverId, step.path)}">${step.label}</a></li>`,
  );
  return html`<nav class="crumbs file-trail" aria-label="Folder"><ol>${items}</ol></nav>`;
}

/** What the viewer may do with a server's files, as the page words and draws it. */
export interface FileReach {
  read: boolean;
  write: boolean;
  /** Where a member's grant reaches (empty: everywhere it reaches, the whole directory). */
  paths: string[];
  /** Whether the viewer is an owner or admin. */
  manager: boolean;
}

/**
 * What the viewer's role and grant say (the page draws write buttons only where they may write;
 * core still checks every call, so a grant used up or expired meanwhile is its refusal).
 */
export async function fileReachOf(v: Viewer, org: Organization, s: Server): Promise<FileReach> {
  const writable = s.files === FilesMode.ON;
  if (canManage(org.role)) return { read: true, write: writable, paths: [], manager: true };
  const { accessGrants } = await v.core.organizations.getCurrentMember({ organizationSlug: org.slug });
  const grant = accessGrants.find((g) => g.serverId === s.id);
  const mayWrite = !!grant?.actions.includes(ServerAction.FILES_WRITE);
  const mayRead = mayWrite || !!grant?.actions.includes(ServerAction.FILES_READ);
  return { read: mayRead, write: mayWrite && writable, paths: grant?.constraints?.filePaths ?? [], manager: false };
}

/** The server of the URL, and its organization. */
export async function serverOf(ctx: Context, v: Viewer): Promise<{ org: Organization; server: Server }> {
  const org = orgOf(v, ctx.params.slug);
  const { server } = await v.core.servers.getServer({ serverId: ctx.params.id });
  return { org, server: server! };
}

/** A refusal of core's as a page shows it. */
export interface FileProblem {
  status: number;
  /** The domain reason (edit_conflict, too_large…), or the code's name. */
  reason: string;
  message: string;
}

/**
 * Core's refusal of a files call, to show on the page; undefined for what the page cannot explain
 * (signed out, an unexplained failure), which the caller throws again for the error pages.
 */
export function fileProblem(error: unknown): FileProblem | undefined {
  if (!(error instanceof ConnectError) || error.code === Code.Unauthenticated) return undefined;
  if (error.code === Code.Unimplemented) return { status: 501, reason: "unimplemented", message: "This Outpost cannot do that yet: it needs a newer version." };
  if (isUnexplainedFailure(error)) return undefined;
  const reason = error.findDetails(ErrorInfoSchema)[0]?.reason ?? "";
  const status = failureHttpStatus(connectCodeName(error.code), reason);
  const text = error.rawMessage;
  return { status, reason, message: `${text.charAt(0).toUpperCase()}${text.slice(1)}${/[.!?]$/.test(text) ? "" : "."}` };
}

/** `fileProblem(error)`, or the error thrown again. */
export function fileProblemOrThrow(error: unknown): FileProblem {
  const problem = fileProblem(error);
  if (!problem) throw error;
  return problem;
}

/** A refusal as an alert. */
export function problemAlert(problem: FileProblem | undefined): Html {
  return problem ? html`<div class="alert" role="alert"><p>${problem.message}</p></div>` : html``;
}
