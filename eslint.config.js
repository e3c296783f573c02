// The house rules a tool keeps (docs/architecture.md, "Lint and format"): size, import cycles, and
// the typescript-eslint rules the tree passes. Style is Prettier's (.prettierrc.json), not ESLint's.
// An exception is stated where it is: `// eslint-disable-next-line <rule> -- <why>` at the site.
import tseslint from "typescript-eslint";
import importX, { createNodeResolver } from "eslint-plugin-import-x";
import outpost from "./scripts/lint/type-import-cycles.ts";

export default tseslint.config(
  { ignores: ["gen/**", "node_modules/**", ".tools/**"] },
  {
    linterOptions: {
      // A stated exception that no longer excuses anything is removed, not kept as a stale excuse.
      reportUnusedDisableDirectives: "error",
    },
  },
  {
    files: ["**/*.ts"],
    extends: [tseslint.configs.recommended],
    plugins: { "import-x": importX, outpost },
    settings: {
      // Imports name their files (`./x.ts`, `../gen/….js`), so Node's resolution is the whole story.
      "import-x/resolver-next": [createNodeResolver()],
      "import-x/extensions": [".ts", ".js"],
      "import-x/parsers": { "@typescript-eslint/parser": [".ts"] },
      // Generated code and packages never import our modules back: no cycle runs through them.
      "import-x/ignore": ["/gen/", "node_modules"],
    },
    rules: {
      // About 100 lines is normal; past 300 a file holds more than one responsibility (STYLE.md).
      "max-lines": ["error", { max: 300, skipBlankLines: true, skipComments: true }],
      // A function over 80 lines does several steps that deserve names.
      "max-lines-per-function": ["error", { max: 80, skipBlankLines: true, skipComments: true, IIFEs: true }],
      // Value cycles (import-x); cycles closed by a type-only import, which import-x skips (ours).
      "import-x/no-cycle": "error",
      "outpost/type-import-cycles": "error",
      // Unused on purpose is spelled with a leading underscore (a parameter an interface imposes).
      "@typescript-eslint/no-unused-vars": [
        "error",
        { argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrorsIgnorePattern: "^_", destructuredArrayIgnorePattern: "^_", ignoreRestSiblings: true },
      ],
    },
  },
  {
    // A suite's describe block holds its cases and a scenario reads top to bottom, so their length
    // is the suite's, not a function's; shared helpers (test/support) keep the limit.
    files: ["test/**/*.test.ts"],
    rules: { "max-lines-per-function": "off" },
  },
);
