/**
 * The file browser's page: the agent's files mode and what the viewer may do, the trail of folders,
 * the listing (folders first, 1,000 a page), and the forms that change it (new folder, upload,
 * rename, delete). Every form works without script; files.js adds drag and drop and a progress bar
 * to the upload, and dashboard.js turns the delete forms' confirmation into a dialog.
 */
import { FileType, FilesMode, type FileEntry, type Server } from "../../gen/outpost/servers/v1/resources_pb.js";
import type { Organization } from "../../gen/outpost/organizations/v1/resources_pb.js";
import type { Viewer } from "./context.ts";
import { byteSize, when } from "./format.ts";
import { dangerForm, postForm } from "./forms.ts";
import { html, type Html } from "../html.ts";
import { orgPath } from "./paths.ts";
import { childPath, downloadHref, filesPath, folderHref, folderTrail, problemAlert, type FileProblem, type FileReach } from "./files-context.ts";

/** One page of a folder, as core listed it; `cursor` is the page's own (absent on the first). */
export interface Listing {
  path: string;
  entries: FileEntry[];
  nextCursor: string;
  cursor?: string;
}

/** What the page shows besides the folder: a refused form, or why there is no listing. */
export interface FilesPageState {
  /** Why the folder could not be listed, or an action on it was refused. */
  problem?: FileProblem;
  /** The new-folder form, refused: the name typed and why. */
  folder?: { name: string; problem: FileProblem };
  /** The upload form, refused. */
  upload?: FileProblem;
}

/** What the agent's operator lets Outpost do, in a sentence. */
export function filesModeWords(s: Server): string {
  const mode =
    s.files === FilesMode.ON
      ? "The agent lets Outpost list, read and change the server's files."
      : s.files === FilesMode.READ_ONLY
        ? "The agent lets Outpost list and read the server's files, but not change them (its operator started it with --files read-only)."
        : "The agent serves no files (its operator started it with --files off, or it is older than the files panel).";
  return s.online ? mode : `The server's agent is offline: files can be reached while it is connected. ${mode}`;
}

/** What the viewer may do, in a sentence (and a member's paths). */
export function reachWords(reach: FileReach): Html {
  const verbs = reach.write ? "read and change" : "read";
  if (reach.manager) return html`<p>As an owner or admin you may ${verbs} files everywhere the agent allows.</p>`;
  if (!reach.read) return html`<p>Your grant to this server does not include its files.</p>`;
  if (!reach.paths.length) return html`<p>Your grant lets you ${verbs} files anywhere in the server's directory.</p>`;
  return html`<p>Your grant lets you ${verbs} files only at these paths, and in the folders that lead to them:</p><ul class="paths">${reach.paths.map((p) => html`<li class="mono">${p}</li>`)}</ul>`;
}

function entryRow(v: Viewer, org: Organization, s: Server, folder: string, entry: FileEntry, reach: FileReach): Html {
  const path = childPath(folder, entry.name);
  const directory = entry.type === FileType.DIRECTORY;
  const name = directory
    ? html`<a href="${folderHref(org, s.id, path)}">${entry.name}/</a>`
    : html`<a href="${filesPath(org, s.id, "/edit", { path })}">${entry.name}</a>${entry.type === FileType.SYMLINK ? html` <span class="muted">(link)</span>` : ""}`;
  const actions = [
    directory ? "" : html`<a class="btn small ghost" href="${downloadHref(s.id, path)}" download="${entry.name}" aria-label="Download ${entry.name}">Download</a>`,
    reach.write ? html`<a class="btn small ghost" href="${filesPath(org, s.id, "/move", { path })}" aria-label="Rename or move ${entry.name}">Rename</a>` : "",
    reach.write
      ? dangerForm({
          action: filesPath(org, s.id, "/delete"),
          token: v.formToken,
          label: "Delete",
          ariaLabel: `Delete ${entry.name}`,
          confirm: directory ? `Delete the folder "${entry.name}" and everything in it?` : `Delete "${entry.name}"?`,
          consequence: directory ? "The folder is deleted with every file and folder in it." : "The file is deleted from the server's directory.",
          fields: directory ? { path, recursive: "yes" } : { path },
          buttonClass: "danger small",
        })
      : "",
  ];
  return html`<tr><td class="file-name">${name}</td><td>${directory ? html`<span class="muted">Folder</span>` : byteSize(entry.size)}</td><td>${when(entry.modifiedAt)}</td><td class="row-actions">${actions}</td></tr>`;
}

function listingTable(v: Viewer, org: Organization, s: Server, listing: Listing, reach: FileReach): Html {
  if (!listing.entries.length) return html`<p class="empty">${listing.cursor ? "No more entries." : "This folder is empty."}</p>`;
  const label = `Files in ${listing.path || "the server's directory"}`;
  const rows = listing.entries.map((entry) => entryRow(v, org, s, listing.path, entry, reach));
  return html`<div class="table-wrap" role="region" tabindex="0" aria-label="${label}"><table class="files"><caption class="sr-only">${label}</caption><thead><tr><th scope="col">Name</th><th scope="col">Size</th><th scope="col">Modified</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead><tbody>${rows}</tbody></table></div>`;
}

function pager(org: Organization, s: Server, listing: Listing): Html {
  const links = [
    listing.cursor ? html`<a href="${folderHref(org, s.id, listing.path)}">Back to the first entries</a>` : "",
    listing.nextCursor ? html`<a class="btn" href="${filesPath(org, s.id, "", { path: listing.path, cursor: listing.nextCursor })}">More</a>` : "",
  ];
  return listing.cursor || listing.nextCursor ? html`<p class="pager">Entries are shown 1,000 at a time. ${links}</p>` : html``;
}

function newFolderForm(v: Viewer, org: Organization, s: Server, folder: string, state: FilesPageState): Html {
  const refused = state.folder;
  return postForm(
    filesPath(org, s.id, "/folder"),
    v.formToken,
    html`<h3 id="new-folder-heading">New folder</h3>
<input type="hidden" name="path" value="${folder}">
<div class="field${refused ? " invalid" : ""}"><label for="folder-name">Folder name</label>
<div class="command-row"><input id="folder-name" name="name" type="text" required maxlength="255" autocomplete="off" value="${refused?.name ?? ""}"${refused ? html` aria-invalid="true" aria-describedby="folder-name-error"` : ""}><button type="submit" class="btn">Create folder</button></div>
${refused ? html`<p class="field-error" id="folder-name-error">${refused.problem.message}</p>` : ""}</div>`,
    html` class="stack" aria-labelledby="new-folder-heading"`,
  );
}

function uploadForm(v: Viewer, org: Organization, s: Server, folder: string, state: FilesPageState): Html {
  const raw = `/api/http/servers/uploadFile?${new URLSearchParams({ serverId: s.id })}`;
  const done = filesPath(org, s.id, "", { ...(folder && { path: folder }), notice: "file-uploaded" });
  return postForm(
    filesPath(org, s.id, "/upload"),
    v.formToken,
    html`<h3 id="upload-heading">Upload</h3>
${problemAlert(state.upload)}
<input type="hidden" name="path" value="${folder}">
<div class="field"><label for="upload-file">File</label>
<input id="upload-file" name="file" type="file" required aria-describedby="upload-file-hint">
<p class="hint" id="upload-file-hint">Up to 1 GiB, into this folder. A file of the same name here is replaced.</p></div>
<div class="dropzone" data-dropzone hidden><p>Or drop files here.</p></div>
<div class="upload-progress" data-upload-progress hidden><label for="upload-progress">Uploading</label> <progress id="upload-progress" max="1" value="0"></progress></div>
<p class="hint" data-upload-status role="status"></p>
<div class="actions"><button type="submit" class="btn primary">Upload</button></div>`,
    html` class="stack upload" enctype="multipart/form-data" aria-labelledby="upload-heading" data-upload="${raw}" data-folder="${folder}" data-done="${done}"`,
  );
}

/** The browser's body: the mode and reach, the trail, the listing or why there is none, the forms. */
export function filesBody(v: Viewer, org: Organization, s: Server, folder: string, listing: Listing | undefined, reach: FileReach, state: FilesPageState): Html {
  return html`<section class="panel stack" aria-labelledby="files-mode-heading">
<h2 id="files-mode-heading">What you can do here</h2>
<p>${filesModeWords(s)}</p>
${reachWords(reach)}
${reach.manager || reach.write ? "" : html`<p><a href="${orgPath(org, `/servers/${s.id}/request`)}">Ask for more access</a> to the server's files.</p>`}
</section>
<section class="panel stack files-panel" aria-labelledby="files-heading">
<h2 id="files-heading">${folder ? folder.slice(folder.lastIndexOf("/") + 1) : "Server directory"}</h2>
${folderTrail(org, s.id, listing?.path ?? folder)}
${problemAlert(state.problem)}
${listing ? html`${listingTable(v, org, s, listing, reach)}${pager(org, s, listing)}` : ""}
${reach.write && listing ? html`${newFolderForm(v, org, s, listing.path, state)}${uploadForm(v, org, s, listing.path, state)}` : ""}
</section>`;
}

/** The Files panel of a server's page: the agent's mode, and the way to the browser and the plugins. */
export function filesPanel(org: Organization, s: Server): Html {
  return html`<section class="panel stack" aria-labelledby="files-panel-heading">
<h2 id="files-panel-heading">Files</h2>
<p class="hint">${filesModeWords(s)}</p>
<p class="actions"><a class="btn" href="${folderHref(org, s.id, "")}">Browse files</a> <a class="btn ghost" href="${orgPath(org, `/servers/${s.id}/plugins`)}">Plugins and mods</a></p>
</section>`;
}
