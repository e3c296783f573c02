/**
 * A text file of a server in the editor: a plain `<textarea>` form that saves with servers/
 * writeFile and the sha256 of the version shown, so nobody's change is overwritten unseen. With
 * script, editor.js puts CodeMirror over the textarea (line numbers, highlighting for YAML, JSON,
 * .properties and TOML), loaded as ES modules through the import map of editor-modules.ts. A save
 * over a version that changed meanwhile (edit_conflict) shows both versions: keep editing from
 * theirs, or save yours over it, deliberately. Files that are not UTF-8 text, or larger than
 * 5 MiB, are offered for download instead.
 */
import type { Router } from "@koa/router";
import type { Context } from "koa";
import type { Organization } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { FilesMode, type Server } from "../../gen/outpost/servers/v1/resources_pb.js";
import type { ReadFileResponse } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { action, done, noticeOf, page, render, type ActionHandler, type DashboardDeps, type Viewer } from "./context.ts";
import { byteSize, when } from "./format.ts";
import { html, type Html } from "../html.ts";
import { orgPath } from "./paths.ts";
import { baseName, downloadHref, fileProblemOrThrow, fileReachOf, filesPath, folderTrail, parentOf, problemAlert, serverOf, type FileProblem } from "./files-context.ts";
import { editorForm, type EditorFormOptions } from "./file-editor-views.ts";
import { styleNonce } from "./editor-modules.ts";

/** How a file's lines end: a textarea sends CRLF, so a file that had LF alone gets LF back. */
type Newline = "lf" | "crlf";

const newlineOf = (content: string): Newline => (content.includes("\r\n") ? "crlf" : "lf");

/** The page around the editor: its modules, their import map, and the CSP that allows the map. */
function renderEditorPage(ctx: Context, v: Viewer, org: Organization, s: Server, path: string, nonce: string, body: Html, status: number): void {
  render(
    ctx,
    v,
    {
      title: baseName(path) || "File",
      org,
      section: "servers",
      notice: noticeOf(ctx),
      crumbs: [
        { href: orgPath(org, "/servers"), label: "Servers" },
        { href: orgPath(org, `/servers/${s.id}`), label: s.name },
        { href: filesPath(org, s.id), label: "Files" },
      ],
      modules: { files: ["editor.js"], importMap: v.deps.editor.importMap },
      policy: v.deps.editor.policy(nonce),
      body: html`${folderTrail(org, s.id, parentOf(path), true)}${body}`,
    },
    status,
  );
}

function fileFacts(s: Server, path: string, file: ReadFileResponse | undefined, org: Organization): Html {
  return html`<div class="file-facts"><dl class="facts">
${file ? html`<div><dt>Size</dt><dd>${byteSize(file.size)}</dd></div><div><dt>Modified</dt><dd>${when(file.modifiedAt)}</dd></div>` : ""}
<div class="wide"><dt>Path</dt><dd class="mono">${path}</dd></div>
</dl>
<p class="actions"><a class="btn" href="${downloadHref(s.id, path)}" download="${baseName(path)}">Download</a> <a class="btn ghost" href="${filesPath(org, s.id, "/history", { path })}">History</a></p></div>`;
}

/** Why the file is not in an editor: not text, too large, or core's refusal. */
function notEditable(problem: FileProblem | undefined, file: ReadFileResponse | undefined): Html {
  if (file) return html`<p>This file is not UTF-8 text, so it cannot be edited here. Download it instead.</p>`;
  if (problem?.reason === "too_large") return html`<p>This file is larger than 5 MiB, too large to edit here. Download it instead.</p>`;
  return problemAlert(problem);
}

/** The editor's page for `path`: the version read now, or `draft` (the text a refused save sent) over it. */
async function editorPage(ctx: Context, v: Viewer, path: string, draft?: { content: string; sha256?: string; problem: FileProblem }): Promise<void> {
  const { org, server } = await serverOf(ctx, v);
  const reach = await fileReachOf(v, org, server);
  const nonce = styleNonce();
  let file: ReadFileResponse | undefined;
  let problem = draft?.problem;
  try {
    file = await v.core.servers.readFile({ serverId: server.id, path });
  } catch (error) {
    problem ??= fileProblemOrThrow(error);
  }
  const text = file?.encoding === "utf8" ? file : undefined;
  let editor: Html;
  if (text || draft) {
    const content = draft?.content ?? text!.content;
    const form: EditorFormOptions = {
      id: "file-content",
      path,
      content,
      sha256: draft ? draft.sha256 : text!.sha256,
      newline: newlineOf(text?.content ?? content),
      label: `Content of ${baseName(path)}`,
      submit: "Save",
      readOnly: !reach.write,
      hint: reach.write
        ? undefined
        : server.files === FilesMode.ON
          ? "You may read this file, not change it."
          : "The server's agent lets Outpost read files, not change them.",
      styleNonce: nonce,
    };
    editor = html`${draft ? problemAlert(draft.problem) : ""}${editorForm(v, org, server, form)}`;
  } else {
    editor = notEditable(problem, file);
  }
  // A file offered for download instead is a page as any other; a refusal has its own status.
  const status = draft?.problem.status ?? (file || !problem || problem.reason === "too_large" ? 200 : problem.status);
  renderEditorPage(
    ctx,
    v,
    org,
    server,
    path,
    nonce,
    html`${fileFacts(server, path, file, org)}<section class="panel stack" aria-label="Editor">${editor}</section>`,
    status,
  );
}

/** After edit_conflict: both versions, theirs as it is now and yours as sent, each in a form of its own. */
async function conflictPage(ctx: Context, v: Viewer, org: Organization, s: Server, path: string, yours: string, newline: Newline): Promise<void> {
  const nonce = styleNonce();
  let theirs: ReadFileResponse | undefined;
  let gone: FileProblem | undefined;
  try {
    theirs = await v.core.servers.readFile({ serverId: s.id, path });
  } catch (error) {
    gone = fileProblemOrThrow(error);
  }
  const theirText = theirs?.encoding === "utf8" ? theirs : undefined;
  const theirsForm = theirText
    ? editorForm(v, org, s, {
        id: "theirs",
        path,
        content: theirText.content,
        sha256: theirText.sha256,
        newline: newlineOf(theirText.content),
        label: "Their version",
        submit: "Save from their version",
        hint: "Keep editing from the version now on the server; yours stays below to copy from.",
        styleNonce: nonce,
      })
    : gone?.reason === "not_found"
      ? html`<p>The file is no longer there: it was moved or deleted.</p>`
      : gone && gone.reason !== "too_large"
        ? problemAlert(gone)
        : html`<p>The version now on the server is not text that can be shown here.</p>`;
  const yoursForm = editorForm(v, org, s, {
    id: "yours",
    path,
    content: yours,
    // Overwriting only the version shown here: a third change meanwhile is another conflict.
    sha256: theirs?.sha256,
    newline,
    label: "Your version",
    submit: theirs ? "Save my version over theirs" : "Save my version",
    hint: theirs ? "This replaces the version now on the server, and its changes with it." : "This writes the file again, with your version.",
    danger: !!theirs,
    styleNonce: nonce,
  });
  const body = html`<div class="alert" role="alert"><p><strong>The file changed on the server after you opened it.</strong> Nothing was saved: both versions are below.</p></div>
<section class="panel stack" aria-labelledby="theirs-heading"><h2 id="theirs-heading">Now on the server</h2>${theirsForm}</section>
<section class="panel stack" aria-labelledby="yours-heading"><h2 id="yours-heading">Yours, not saved</h2>${yoursForm}</section>`;
  renderEditorPage(ctx, v, org, s, path, nonce, body, 409);
}

const saveFile: ActionHandler = async (ctx, v, form) => {
  const path = form.get("path") ?? "";
  const newline: Newline = form.get("newline") === "crlf" ? "crlf" : "lf";
  const sent = form.get("content") ?? "";
  const content = newline === "lf" ? sent.replace(/\r\n/g, "\n") : sent;
  const expectedSha256 = form.get("expectedSha256") || undefined;
  const { org, server } = await serverOf(ctx, v);
  try {
    await v.core.servers.writeFile({ serverId: server.id, path, content, expectedSha256 });
  } catch (error) {
    const problem = fileProblemOrThrow(error);
    if (problem.reason === "edit_conflict") return conflictPage(ctx, v, org, server, path, content, newline);
    return editorPage(ctx, v, path, { content, sha256: expectedSha256, problem });
  }
  done(ctx, filesPath(org, server.id, "/edit", { path }), "file-saved");
};

export function editorRoutes(router: Router, deps: DashboardDeps): void {
  router.get(
    "/app/o/:slug/servers/:id/files/edit",
    page(deps, (ctx, v) => editorPage(ctx, v, typeof ctx.query.path === "string" ? ctx.query.path : "")),
  );
  router.post("/app/o/:slug/servers/:id/files/save", action(deps, saveFile));
}
