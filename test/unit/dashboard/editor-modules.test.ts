import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createEditorModules, editorSpecifiers, styleNonce } from "../../../edge/dashboard/editor-modules.ts";

/** The bare specifiers a module imports (static imports and re-exports; the packages use no dynamic ones). */
function bareImports(source: string): string[] {
  const found = [...source.matchAll(/(?:^|[\s;])(?:import|export)\s[^;]*?\bfrom\s*['"]([^'"]+)['"]|(?:^|[\s;])import\s*['"]([^'"]+)['"]/g)].map((m) => m[1] ?? m[2]);
  return found.filter((specifier) => !specifier.startsWith(".") && !specifier.startsWith("/"));
}

/**
 * The editor's modules as a browser loads them: every import of every module served (and of the
 * page's own editor.js) has its entry in the import map, so a package upgrade that brings a new
 * dependency fails here rather than in a person's browser; and the CSP names the map by its hash.
 */
describe("dashboard: the file editor's modules and their import map", () => {
  const modules = createEditorModules();
  const map = JSON.parse(/<script type="importmap">([^<]*)<\/script>/.exec(modules.importMap.toString())![1]) as { imports: Record<string, string> };

  it("maps every specifier that the served modules and editor.js import", () => {
    const sources = [
      readFileSync(new URL("../../../edge/dashboard/assets/editor.js", import.meta.url), "utf8"),
      ...editorSpecifiers.map((specifier) => modules.assets.get(`${specifier}.js`)!.body.toString("utf8")),
    ];
    const imported = new Set(sources.flatMap(bareImports));
    assert.ok(
      ["@codemirror/state", "@lezer/common", "crelt", "style-mod", "@codemirror/legacy-modes/mode/toml"].every((s) => imported.has(s)),
      [...imported].join(" "),
    );
    const missing = [...imported].filter((specifier) => !(specifier in map.imports));
    assert.deepEqual(missing, []);
    assert.deepEqual(Object.keys(map.imports).sort(), [...editorSpecifiers].sort());
  });

  it("allows the import map by its hash and the page's style element by its nonce, and nothing inline besides", () => {
    const text = /<script type="importmap">([^<]*)<\/script>/.exec(modules.importMap.toString())![1];
    const nonce = styleNonce();
    const policy = modules.policy(nonce);
    assert.match(policy, new RegExp(`script-src 'self' 'sha256-${createHash("sha256").update(text).digest("base64").replace(/[+/]/g, "\\$&")}';`));
    assert.ok(policy.includes(`style-src 'self' 'nonce-${nonce}';`));
    assert.doesNotMatch(policy, /unsafe/);
    assert.notEqual(styleNonce(), nonce);
  });
});
