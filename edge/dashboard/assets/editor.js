// Outpost dashboard, the file editor: progressive enhancement of a plain textarea form. Without
// this module the textarea is the editor and saving posts it; with it, CodeMirror takes the
// textarea's place (line numbers, highlighting for YAML, JSON, .properties and TOML, undo
// history) and puts its text back into the textarea when the form is sent, so saving is the
// same form either way. An ES module: its bare imports resolve through the page's import map to
// the packages' own files (edge/dashboard/editor-modules.ts), with no build step.
import { EditorState } from "@codemirror/state";
import { EditorView, drawSelection, highlightActiveLine, highlightActiveLineGutter, highlightSpecialChars, keymap, lineNumbers } from "@codemirror/view";
import { defaultKeymap, history, historyKeymap } from "@codemirror/commands";
import { StreamLanguage, bracketMatching, defaultHighlightStyle, indentOnInput, syntaxHighlighting } from "@codemirror/language";
import { yaml } from "@codemirror/lang-yaml";
import { json } from "@codemirror/lang-json";
import { properties } from "@codemirror/legacy-modes/mode/properties";
import { toml } from "@codemirror/legacy-modes/mode/toml";

const languages = {
  yaml: () => yaml(),
  json: () => json(),
  properties: () => StreamLanguage.define(properties),
  toml: () => StreamLanguage.define(toml),
};

/** The editor's extensions for a textarea: its language, and read-only when the textarea is. */
function extensionsFor(textarea) {
  const language = languages[textarea.getAttribute("data-language")];
  const label = document.getElementById(textarea.id + "-label");
  const described = textarea.getAttribute("aria-describedby");
  return [
    lineNumbers(),
    highlightActiveLineGutter(),
    highlightSpecialChars(),
    history(),
    drawSelection(),
    indentOnInput(),
    bracketMatching(),
    highlightActiveLine(),
    syntaxHighlighting(defaultHighlightStyle, { fallback: true }),
    keymap.of([...defaultKeymap, ...historyKeymap]),
    // CodeMirror writes its styles into a <style> element, which the page's CSP allows by this nonce.
    EditorView.cspNonce.of(textarea.getAttribute("data-style-nonce") || ""),
    EditorView.contentAttributes.of({
      ...(label ? { "aria-labelledby": label.id } : {}),
      ...(described ? { "aria-describedby": described } : {}),
    }),
    ...(language ? [language()] : []),
    ...(textarea.readOnly ? [EditorState.readOnly.of(true)] : []),
  ];
}

/** Puts CodeMirror in place of `textarea`; its form gets the editor's text back on submit. */
function enhance(textarea) {
  const holder = document.createElement("div");
  holder.className = "code-editor";
  textarea.after(holder);
  const view = new EditorView({ doc: textarea.value, extensions: extensionsFor(textarea), parent: holder });
  textarea.hidden = true;
  const label = document.getElementById(textarea.id + "-label");
  // The label points at the hidden textarea: a click on it goes to the editor instead.
  if (label) label.addEventListener("click", (event) => (event.preventDefault(), view.focus()));
  let saving = false;
  const form = textarea.form;
  form.addEventListener("submit", () => {
    textarea.value = view.state.doc.toString();
    saving = true;
  });
  // Leaving with changes that were not saved asks first.
  window.addEventListener("beforeunload", (event) => {
    if (!saving && view.state.doc.toString() !== textarea.defaultValue) event.preventDefault();
  });
  holder.setAttribute("data-editor-ready", "");
}

document.querySelectorAll("textarea[data-code-editor]").forEach(enhance);
