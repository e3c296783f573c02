/**
 * A server's files in the dashboard (issue 29), through its agent: the browser (this file and
 * files-views.ts); beside it the editor (file-editor.ts), uploads (file-upload.ts), a file's kept
 * versions (file-history.ts) and the plugins (plugins.ts), each registering its own routes. Core
 * decides every call: who may (role, grant and its paths), what the agent's operator allows, the
 * agent's sandbox; the pages show its refusals in words and draw write buttons only for those who
 * may write.
 */
import type { Router } from "@koa/router";
import type { Context } from "koa";
import { action, confirmed, done, noticeOf, page, render, type ActionHandler, type DashboardDeps, type Viewer } from "./context.ts";
import { html } from "../html.ts";
import { orgPath } from "./paths.ts";
import { filesBody, type FilesPageState, type Listing } from "./files-views.ts";
import {
  baseName,
  childPath,
  fileProblemOrThrow,
  fileReachOf,
  filesPath,
  folderHref,
  folderTrail,
  parentOf,
  problemAlert,
  serverOf,
  shownPath,
  type FileProblem,
} from "./files-context.ts";
import { postForm } from "./forms.ts";

/** Draws the browser at `folder` (the page of `cursor`), with `state`, answering with `status`. */
export async function filesPage(ctx: Context, v: Viewer, folder: string, state: FilesPageState = {}, status = 200, cursor?: string): Promise<void> {
  const { org, server } = await serverOf(ctx, v);
  const reach = await fileReachOf(v, org, server);
  let listing: Listing | undefined;
  let problem = state.problem;
  try {
    const res = await v.core.servers.listFiles({ serverId: server.id, path: folder, ...(cursor && { cursor }) });
    listing = { path: res.path, entries: res.entries, nextCursor: res.nextCursor, cursor };
  } catch (error) {
    problem ??= fileProblemOrThrow(error);
    if (status === 200) status = problem.status;
  }
  render(
    ctx,
    v,
    {
      title: "Files",
      lede: html`The files of <a href="${orgPath(org, `/servers/${server.id}`)}">${server.name}</a>, through its agent.`,
      org,
      section: "servers",
      notice: noticeOf(ctx),
      crumbs: [
        { href: orgPath(org, "/servers"), label: "Servers" },
        { href: orgPath(org, `/servers/${server.id}`), label: server.name },
      ],
      scripts: ["files.js"],
      body: filesBody(v, org, server, folder, listing, reach, { ...state, problem }),
    },
    status,
  );
}

function queryText(ctx: Context, name: string): string {
  const value = ctx.query[name];
  return typeof value === "string" ? value : "";
}

const createFolder: ActionHandler = async (ctx, v, form) => {
  const folder = form.get("path") ?? "";
  const name = (form.get("name") ?? "").trim();
  const { org, server } = await serverOf(ctx, v);
  const refuse = (problem: FileProblem) => filesPage(ctx, v, folder, { folder: { name, problem } }, problem.status);
  if (!name || name.includes("/")) return refuse({ status: 400, reason: "invalid_path", message: "Give the folder a name, without a slash." });
  try {
    await v.core.servers.createDirectory({ serverId: server.id, path: childPath(folder, name) });
  } catch (error) {
    return refuse(fileProblemOrThrow(error));
  }
  done(ctx, folderHref(org, server.id, childPath(folder, name)), "folder-created");
};

/** The rename page: the path, to change in place or to another folder. */
async function movePage(ctx: Context, v: Viewer, path: string, to = path, problem?: FileProblem, status = 200): Promise<void> {
  const { org, server } = await serverOf(ctx, v);
  render(
    ctx,
    v,
    {
      title: `Rename or move "${baseName(path)}"`,
      org,
      section: "servers",
      crumbs: [
        { href: orgPath(org, "/servers"), label: "Servers" },
        { href: orgPath(org, `/servers/${server.id}`), label: server.name },
        { href: folderHref(org, server.id, ""), label: "Files" },
      ],
      body: html`<section class="panel stack" aria-labelledby="move-heading">
<h2 id="move-heading">Where it goes</h2>
${folderTrail(org, server.id, parentOf(path), true)}
${problemAlert(problem)}
${postForm(
  filesPath(org, server.id, "/move"),
  v.formToken,
  html`<input type="hidden" name="from" value="${path}">
<div class="field"><label for="move-to">New path</label>
<input id="move-to" name="to" type="text" class="mono" required maxlength="4096" autocomplete="off" value="${to}" aria-describedby="move-to-hint"${problem ? html` aria-invalid="true"` : ""}>
<p class="hint" id="move-to-hint">From the server's directory, with / between folders: change the last part to rename, the folders before it to move. Nothing already there is replaced.</p></div>
<div class="actions"><button type="submit" class="btn primary">Rename or move</button> <a class="btn ghost" href="${folderHref(org, server.id, parentOf(path))}">Cancel</a></div>`,
  html` class="stack"`,
)}
</section>`,
    },
    status,
  );
}

const moveEntry: ActionHandler = async (ctx, v, form) => {
  const from = form.get("from") ?? "";
  const to = (form.get("to") ?? "").trim();
  const { org, server } = await serverOf(ctx, v);
  try {
    await v.core.servers.moveFile({ serverId: server.id, from, to });
  } catch (error) {
    const problem = fileProblemOrThrow(error);
    return movePage(ctx, v, from, to, problem, problem.status);
  }
  done(ctx, folderHref(org, server.id, parentOf(to)), "file-moved");
};

const deleteEntry: ActionHandler = async (ctx, v, form) => {
  const path = form.get("path") ?? "";
  const recursive = form.get("recursive") === "yes";
  const { org, server } = await serverOf(ctx, v);
  const question = {
    title: recursive ? `Delete the folder "${baseName(path)}" and everything in it?` : `Delete "${baseName(path)}"?`,
    consequence: recursive ? `${shownPath(path)} is deleted with every file and folder in it.` : `${shownPath(path)} is deleted from the server's directory.`,
    label: "Delete",
    cancel: folderHref(org, server.id, parentOf(path)),
    org,
  };
  if (!confirmed(ctx, v, form, question)) return;
  try {
    await v.core.servers.deleteFile({ serverId: server.id, path, recursive });
  } catch (error) {
    const problem = fileProblemOrThrow(error);
    return filesPage(ctx, v, parentOf(path), { problem }, problem.status);
  }
  done(ctx, folderHref(org, server.id, parentOf(path)), "file-deleted");
};

export function fileRoutes(router: Router, deps: DashboardDeps): void {
  const base = "/app/o/:slug/servers/:id/files";
  router.get(
    base,
    page(deps, (ctx, v) => filesPage(ctx, v, queryText(ctx, "path"), {}, 200, queryText(ctx, "cursor") || undefined)),
  );
  router.get(
    `${base}/move`,
    page(deps, (ctx, v) => movePage(ctx, v, queryText(ctx, "path"))),
  );
  router.post(`${base}/folder`, action(deps, createFolder));
  router.post(`${base}/move`, action(deps, moveEntry));
  router.post(`${base}/delete`, action(deps, deleteEntry));
}
