/**
 * The knowledge pages of an organization: the notes (search with marked snippets, a tag filter,
 * the cursor), one note rendered from its Markdown (markdown.ts: the note's text is never
 * markup), and the edit form with its preview and what a version conflict leaves to decide. The
 * forms they post are handled in knowledge.ts.
 */
import type { Context } from "koa";
import type { Note, NoteSummary, SnippetPart } from "../../gen/outpost/knowledge/v1/knowledge_service_pb.js";
import type { Organization } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { managedOrgOf, noticeOf, orgOf, render, type Viewer } from "./context.ts";
import type { FormErrors } from "./core.ts";
import { canManage, when } from "./format.ts";
import { dangerForm, formAlert, postForm, selectField, textArea, textField } from "./forms.ts";
import { html, type Html } from "../html.ts";
import { orgPath } from "./paths.ts";
import { renderMarkdown } from "./markdown.ts";

/** The edit form's values as typed (kept when it comes back: refused, previewed, or in conflict). */
export interface NoteValues {
  title: string;
  content: string;
  tags: string;
  serverId: string;
  /** The version the edit started from; 0 for a new note. */
  version: number;
}

export const emptyNote: NoteValues = { title: "", content: "", tags: "", serverId: "", version: 0 };

export const notePath = (org: Organization, id = "", rest = "") => orgPath(org, `/knowledge${id ? `/${encodeURIComponent(id)}` : ""}${rest}`);

/** The organization of the URL, when the viewer may write its notes; else a 403 page. */
export function writableKnowledge(v: Viewer, slug: string): Organization {
  return managedOrgOf(v, slug, "write its notes");
}

const queryValue = (ctx: Context, name: string) => (typeof ctx.query[name] === "string" ? (ctx.query[name] as string) : "");

function snippet(parts: readonly SnippetPart[]): Html {
  return html`<p class="snippet">${parts.map((p) => (p.match ? html`<mark>${p.text}</mark>` : p.text))}</p>`;
}

function tagList(tags: readonly string[], org: Organization): Html {
  if (!tags.length) return html``;
  return html`<ul class="tags" aria-label="Tags">${tags.map((t) => html`<li><a class="badge" href="${notePath(org)}?tag=${encodeURIComponent(t)}">${t}</a></li>`)}</ul>`;
}

function byline(note: Note, servers: Map<string, string>): Html {
  const s = note.spec!;
  const about = s.serverId ? html`About ${servers.get(s.serverId) ?? "a server"} · ` : note.managersOnly ? html`Owners and admins only: its server was deleted · ` : "";
  return html`<p class="muted">${about}By ${note.author?.name || "a former member"} · updated ${when(note.updatedAt)}${
    note.updatedBy?.userId && note.updatedBy.userId !== note.author?.userId ? html` by ${note.updatedBy.name}` : ""
  } · version ${note.version}</p>`;
}

function summary(org: Organization, n: NoteSummary, servers: Map<string, string>): Html {
  const note = n.note!;
  return html`<li class="note-item">
<h2><a href="${notePath(org, note.id)}">${note.spec!.title}</a></h2>
${byline(note, servers)}
${n.snippet.length ? snippet(n.snippet) : ""}
${tagList(note.spec!.tags, org)}
</li>`;
}

export async function notesPage(ctx: Context, v: Viewer): Promise<void> {
  const org = orgOf(v, ctx.params.slug);
  const search = queryValue(ctx, "q").slice(0, 200);
  const tag = queryValue(ctx, "tag").slice(0, 64);
  const cursor = queryValue(ctx, "cursor") || undefined;
  const [{ notes, nextCursor }, { servers }] = await Promise.all([
    v.core.knowledge.listNotes({ organizationSlug: org.slug, search: search || undefined, tag: tag.trim() || undefined, cursor, limit: 20 }),
    v.core.servers.listServers({ organizationSlug: org.slug }),
  ]);
  const serverNames = new Map(servers.map((s) => [s.id, s.name]));
  const more = new URLSearchParams({ ...(search ? { q: search } : {}), ...(tag ? { tag } : {}), cursor: nextCursor });
  render(ctx, v, {
    title: "Knowledge",
    org,
    section: "knowledge",
    notice: noticeOf(ctx),
    lede: canManage(org.role)
      ? html`Notes and runbooks of ${org.name}. <a href="${notePath(org, "", "/new")}">Write a note</a>.`
      : html`Notes and runbooks of ${org.name}.`,
    body: html`<form method="get" action="${notePath(org)}" class="panel search-form" role="search" aria-label="Search notes">
<div class="field"><label for="f-q">Search</label><input id="f-q" name="q" type="search" value="${search}" maxlength="200" aria-describedby="f-q-hint"><p class="hint" id="f-q-hint">Words, "a phrase", or -word to leave out.</p></div>
<div class="field"><label for="f-tag">Tag</label><input id="f-tag" name="tag" type="text" value="${tag}" maxlength="64"></div>
<div class="actions"><button type="submit" class="btn primary">Search</button>${search || tag ? html` <a class="btn ghost" href="${notePath(org)}">Clear</a>` : ""}</div>
</form>
${
  notes.length
    ? html`<ol class="notes" aria-label="${search ? "Best matches first" : "Newest first"}">${notes.map((n) => summary(org, n, serverNames))}</ol>`
    : html`<p class="empty">${search || tag ? "No notes match." : "No notes yet."}</p>`
}
${nextCursor ? html`<div class="actions"><a class="btn" href="${notePath(org)}?${more.toString()}">More notes</a></div>` : ""}`,
  });
}

export async function notePage(ctx: Context, v: Viewer): Promise<void> {
  const org = orgOf(v, ctx.params.slug);
  const [{ note }, { servers }] = await Promise.all([
    v.core.knowledge.getNote({ organizationSlug: org.slug, noteId: ctx.params.noteId }),
    v.core.servers.listServers({ organizationSlug: org.slug }),
  ]);
  const n = note!;
  const actions = canManage(org.role)
    ? html`<div class="actions"><a class="btn" href="${notePath(org, n.id, "/edit")}">Edit</a> ${dangerForm({ action: notePath(org, n.id, "/delete"), token: v.formToken, label: "Delete", ariaLabel: `Delete ${n.spec!.title}`, confirm: `Delete the note ${n.spec!.title}?`, consequence: "It is gone for everyone. This cannot be undone." })}</div>`
    : "";
  render(ctx, v, {
    title: n.spec!.title,
    org,
    section: "knowledge",
    notice: noticeOf(ctx),
    crumbs: [{ href: notePath(org), label: "Knowledge" }],
    lede: byline(n, new Map(servers.map((s) => [s.id, s.name]))),
    body: html`${tagList(n.spec!.tags, org)}
<article class="panel markdown">${renderMarkdown(n.spec!.content)}</article>
${actions}`,
  });
}

/** What the edit page shows besides the form: a preview, or someone else's newer version. */
export interface EditExtras {
  errors?: FormErrors;
  preview?: boolean;
  /** The note as it is now, when the edit started from an older version. */
  conflict?: Note;
}

/** The form that writes a note: new when `note` is absent, else an edit of it. */
export async function editPage(ctx: Context, v: Viewer, values: NoteValues, noteId: string | undefined, extras: EditExtras = {}, status = 200): Promise<void> {
  const org = writableKnowledge(v, ctx.params.slug);
  const { servers } = await v.core.servers.listServers({ organizationSlug: org.slug });
  const conflict = extras.conflict;
  const fields = ["title", "content", "tags", "serverId"];
  const form = postForm(
    noteId ? notePath(org, noteId) : notePath(org),
    v.formToken,
    html`${formAlert(extras.errors, fields)}
<input type="hidden" name="version" value="${String(values.version)}">
${textField({ name: "title", label: "Title", value: values.title, required: true, maxlength: 200, errors: extras.errors })}
${textArea({ name: "content", label: "Content (Markdown)", value: values.content, rows: 16, hint: "Headings (#), lists (-, 1.), **bold**, *italic*, `code`, ``` code blocks, > quotes and [links](https://…). HTML is shown as text.", errors: extras.errors })}
${textField({ name: "tags", label: "Tags", value: values.tags, maxlength: 1000, hint: "Separated by commas: a–z, 0–9 and -, at most 20.", errors: extras.errors })}
${selectField({ name: "serverId", label: "Server", value: values.serverId, options: [{ value: "", label: "No server (every member sees it)" }, ...servers.map((s) => ({ value: s.id, label: s.name }))], errors: extras.errors, hint: "A note about a server is seen by those who see the server." })}
<div class="actions"><button type="submit" name="intent" value="save" class="btn primary">${noteId ? "Save note" : "Create note"}</button> <button type="submit" name="intent" value="preview" class="btn">Preview</button> <a class="btn ghost" href="${noteId ? notePath(org, noteId) : notePath(org)}">Cancel</a></div>`,
    html` class="panel stack" aria-label="${noteId ? "Edit note" : "New note"}"`,
  );
  const conflictBlock = conflict
    ? html`<div class="alert" role="alert"><p><strong>Someone else changed this note while you were editing it.</strong> It is now at version ${conflict.version} (by ${conflict.updatedBy?.name || "someone"}, ${when(conflict.updatedAt)}). Your text is kept in the form; their version is below. Saving again replaces their version with yours.</p></div>
<section class="panel" aria-labelledby="theirs-heading"><h2 id="theirs-heading">Their version: ${conflict.spec!.title}</h2><div class="markdown">${renderMarkdown(conflict.spec!.content)}</div></section>`
    : "";
  const previewBlock = extras.preview
    ? html`<section class="panel" aria-labelledby="preview-heading"><h2 id="preview-heading">Preview: ${values.title || "(no title)"}</h2><div class="markdown">${renderMarkdown(values.content)}</div></section>`
    : "";
  render(
    ctx,
    v,
    {
      title: noteId ? "Edit note" : "New note",
      org,
      section: "knowledge",
      crumbs: [{ href: notePath(org), label: "Knowledge" }, ...(noteId ? [{ href: notePath(org, noteId), label: values.title || "Note" }] : [])],
      body: html`${conflictBlock}${previewBlock}${form}`,
    },
    status,
  );
}
