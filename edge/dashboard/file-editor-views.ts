/**
 * The editor's form: a `<textarea>` that works as it is, which editor.js turns into CodeMirror
 * (data-code-editor, in the language data-language names), and the hidden facts a save needs:
 * the path, the sha256 of the version shown, and how its lines ended.
 */
import type { Organization } from "../../gen/outpost/organizations/v1/resources_pb.js";
import type { Server } from "../../gen/outpost/servers/v1/resources_pb.js";
import type { Viewer } from "./context.ts";
import { html, type Html } from "../html.ts";
import { postForm } from "./forms.ts";
import { filesPath } from "./files-context.ts";

export interface EditorFormOptions {
  /** The textarea's id (and the prefix of its label's and hint's). */
  id: string;
  path: string;
  content: string;
  /** The version the content was edited from: writeFile's expectedSha256 (none: written whatever is there). */
  sha256?: string;
  newline: "lf" | "crlf";
  label: string;
  submit: string;
  hint?: string;
  readOnly?: boolean;
  /** The save replaces a version the person has seen differ from theirs. */
  danger?: boolean;
  /** The page's nonce for CodeMirror's `<style>` element (editor-modules.ts). */
  styleNonce: string;
}

/** The languages editor.js highlights, by the file's extension (anything else is plain text). */
const languages: Record<string, string> = { yml: "yaml", yaml: "yaml", json: "json", mcmeta: "json", properties: "properties", toml: "toml" };

export function languageOf(path: string): string {
  const name = path.slice(path.lastIndexOf("/") + 1);
  const dot = name.lastIndexOf(".");
  return dot > 0 ? (languages[name.slice(dot + 1).toLowerCase()] ?? "text") : "text";
}

export function editorForm(v: Viewer, org: Organization, s: Server, o: EditorFormOptions): Html {
  const hintId = `${o.id}-hint`;
  // A newline right after <textarea> is dropped by the parser: this one, so that a first empty line is kept.
  const textarea = html`<textarea id="${o.id}" name="content" class="code" rows="24" wrap="off" spellcheck="false" autocomplete="off" autocapitalize="off"${
    o.hint ? html` aria-describedby="${hintId}"` : ""
  }${o.readOnly ? html` readonly` : ""} data-code-editor data-language="${languageOf(o.path)}" data-style-nonce="${o.styleNonce}">
${o.content}</textarea>`;
  return postForm(
    filesPath(org, s.id, "/save"),
    v.formToken,
    html`<input type="hidden" name="path" value="${o.path}">
${o.sha256 ? html`<input type="hidden" name="expectedSha256" value="${o.sha256}">` : ""}
<input type="hidden" name="newline" value="${o.newline}">
<div class="field"><label for="${o.id}" id="${o.id}-label">${o.label}</label>
${textarea}
${o.hint ? html`<p class="hint" id="${hintId}">${o.hint}</p>` : ""}</div>
${o.readOnly ? "" : html`<div class="actions"><button type="submit" class="btn ${o.danger ? "danger" : "primary"}">${o.submit}</button></div>`}`,
    html` class="stack editor-form" data-editor-form`,
  );
}
