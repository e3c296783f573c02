/**
 * The file editor's CodeMirror 6, served as the packages ship it: each ES module straight from
 * node_modules under /app/vendor/, with no build step, and one import map that resolves every
 * bare specifier those modules import (theirs and their dependencies'). Each URL carries its
 * file's content hash, so browsers cache the modules for good, and the map gives each one's
 * integrity, so a file changed on the way does not run.
 *
 * The CSP of an editor's page stays the dashboard's but for two inline elements it allows by name:
 * the import map, by its hash (browsers take import maps only inline), and CodeMirror's own
 * `<style>` element, by a nonce made for the page (style-mod writes the editor's styles into one,
 * and EditorView.cspNonce gives it the nonce). Scripts stay 'self' and that one hash.
 */
import { createHash, randomBytes } from "node:crypto";
import { AssetSet, allowScriptHashes, dashboardContentSecurityPolicy } from "../pages.ts";
import { jsonScript, scriptJson, type Html } from "../html.ts";

/**
 * Every module the editor loads, by the specifier that imports it. A package's new import fails
 * test/unit/edge/editor-modules.test.ts until it is listed here.
 */
export const editorSpecifiers = [
  "@codemirror/state",
  "@codemirror/view",
  "@codemirror/commands",
  "@codemirror/language",
  "@codemirror/streamparser",
  "@codemirror/lang-yaml",
  "@codemirror/lang-json",
  "@codemirror/legacy-modes/mode/properties",
  "@codemirror/legacy-modes/mode/toml",
  "@lezer/common",
  "@lezer/highlight",
  "@lezer/lr",
  "@lezer/yaml",
  "@lezer/json",
  "@marijn/find-cluster-break",
  "style-mod",
  "w3c-keyname",
  "crelt",
] as const;

/** The URL the modules are served under. */
export const vendorPath = "/app/vendor/";

/** A specifier's file as Node resolves it for `import` (the packages' ESM entry points). */
function moduleFile(specifier: string): URL {
  return new URL(import.meta.resolve(specifier));
}

export interface EditorModules {
  /** Serves the modules (immutable under their hashed URLs). */
  assets: AssetSet;
  /** The import map, for the head of an editor's page. */
  importMap: Html;
  /** The CSP of an editor's page: the dashboard's, with the import map's hash and the page's style nonce. */
  policy(styleNonce: string): string;
}

/** A nonce for one page's CodeMirror `<style>` element. */
export function styleNonce(): string {
  return randomBytes(18).toString("base64");
}

/** Reads the modules once (at start-up) and makes their import map. */
export function createEditorModules(): EditorModules {
  const named = editorSpecifiers.map((specifier) => [`${specifier}.js`, moduleFile(specifier)] as const);
  const assets = new AssetSet(vendorPath, new URL("./", import.meta.url), named);
  const imports: Record<string, string> = {};
  const integrity: Record<string, string> = {};
  for (const specifier of editorSpecifiers) {
    const href = assets.href(`${specifier}.js`);
    imports[specifier] = href;
    integrity[href] = `sha384-${createHash("sha384")
      .update(assets.get(`${specifier}.js`)!.body)
      .digest("base64")}`;
  }
  const map = { imports, integrity };
  const hash = `sha256-${createHash("sha256").update(scriptJson(map)).digest("base64")}`;
  const withMap = allowScriptHashes(dashboardContentSecurityPolicy, [hash]);
  return {
    assets,
    importMap: jsonScript("importmap", map),
    policy: (nonce) => withMap.replace("style-src 'self'", `style-src 'self' 'nonce-${nonce}'`),
  };
}
