// Builds the package into dist/: src compiled by the repository's TypeScript (JS + .d.ts), with
// the generated code it needs beside it. In the repository the sources import the contract and
// gen/ by relative paths (../../../gen/…), so that the root's tests run them as they are; here they
// are staged with those paths pointing into the package, and only the generated files the public
// services reach are copied: the services, errors_pb, and what they import, followed file by file.
// buf/validate's descriptors (which gen/ imports from @bufbuild/protovalidate) are copied in too,
// so the package does not pull protovalidate's validator and CEL runtime in for one file.
// Plain JavaScript, so that it runs on the Node that runs npm (20 and newer).
import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, posix, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const pkg = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const root = resolve(pkg, "../..");
const stage = join(pkg, ".build");
const dist = join(pkg, "dist");
const requireFromRoot = createRequire(join(root, "package.json"));

/** Where gen/ imports buf/validate from, and where that file is in the installed package. */
const protovalidate = "@bufbuild/protovalidate/gen/buf/validate/validate_pb.js";
// Resolved as an import (the ES module build), not as a require (CommonJS).
const protovalidateEsm = fileURLToPath(import.meta.resolve(protovalidate)).replace(/\.js$/, "");
const vendoredValidate = "buf/validate/validate_pb.js";

/** The only packages the built files may import: the package's dependencies. */
const dependencies = Object.keys(JSON.parse(readFileSync(join(pkg, "package.json"), "utf8")).dependencies);

/** The module specifier of each import or re-export statement (generated code has no other kind). */
const specifiers = /^((?:import|export)\b[^;]*?\bfrom\s*)"([^"]+)"/gm;

rmSync(stage, { recursive: true, force: true });
rmSync(dist, { recursive: true, force: true });

/** gen/ files to copy (paths under gen/, ending .js), and contract/ files (ending .ts). */
const genQueue = [];
const contractFiles = new Set();

function stageSource(name) {
  const text = readFileSync(join(pkg, "src", name), "utf8").replace(specifiers, (whole, lead, spec) => {
    if (spec === protovalidate) return `${lead}"./gen/${vendoredValidate}"`;
    const inRepo = /^\.\.\/\.\.\/\.\.\/(gen|contract)\/(.+)$/.exec(spec);
    if (!inRepo) return whole;
    if (inRepo[1] === "gen") genQueue.push(inRepo[2]);
    else contractFiles.add(inRepo[2]);
    return `${lead}"./${inRepo[1]}/${inRepo[2]}"`;
  });
  writeFileSync(join(stage, name), text);
}

mkdirSync(stage, { recursive: true });
for (const name of readdirSync(join(pkg, "src"))) if (name.endsWith(".ts")) stageSource(name);

// The contract files the client shares with the edge are dependency-free by rule: check it.
for (const file of contractFiles) {
  const text = readFileSync(join(root, "contract", file), "utf8");
  if (text.match(specifiers)) throw new Error(`contract/${file} imports something; the client can only share dependency-free contract files`);
  mkdirSync(join(stage, "contract"), { recursive: true });
  writeFileSync(join(stage, "contract", file), text);
}

/** Rewrites a generated file's imports for the package, queueing the gen/ files it reaches. */
function packageImports(text, genPath) {
  return text.replace(specifiers, (whole, lead, spec) => {
    if (spec.startsWith(".")) {
      genQueue.push(posix.join(posix.dirname(genPath), spec));
      return whole;
    }
    if (spec === protovalidate) return `${lead}"${posix.relative(posix.dirname(genPath), vendoredValidate).replace(/^(?!\.)/, "./")}"`;
    if (!dependencies.some((dep) => spec === dep || spec.startsWith(`${dep}/`)))
      throw new Error(`gen/${genPath} imports ${spec}, which is not a dependency of the package`);
    return whole;
  });
}

const copied = new Set();
while (genQueue.length) {
  const genPath = genQueue.shift();
  if (copied.has(genPath)) continue;
  copied.add(genPath);
  const base = genPath.replace(/\.js$/, "");
  mkdirSync(join(stage, "gen", posix.dirname(genPath)), { recursive: true });
  for (const ext of [".js", ".d.ts"]) {
    writeFileSync(join(stage, "gen", base + ext), packageImports(readFileSync(join(root, "gen", base + ext), "utf8"), genPath));
  }
}
mkdirSync(join(stage, "gen", posix.dirname(vendoredValidate)), { recursive: true });
for (const ext of [".js", ".d.ts"]) cpSync(protovalidateEsm + ext, join(stage, "gen", vendoredValidate.replace(/\.js$/, ext)));

// Compile with the repository's TypeScript (the root's devDependency).
execFileSync(process.execPath, [requireFromRoot.resolve("typescript/bin/tsc"), "-p", join(pkg, "tsconfig.json")], { stdio: "inherit" });
// tsc rewrites "./x.ts" to "./x.js" in the JavaScript but not in the declarations; a consumer
// without allowImportingTsExtensions needs the .js that is there.
for (const dir of [dist, join(dist, "contract")]) {
  for (const name of readdirSync(dir)) {
    if (!name.endsWith(".d.ts")) continue;
    const file = join(dir, name);
    writeFileSync(
      file,
      readFileSync(file, "utf8").replace(specifiers, (whole, lead, spec) => (spec.startsWith(".") ? `${lead}"${spec.replace(/\.ts$/, ".js")}"` : whole)),
    );
  }
}
cpSync(join(stage, "gen"), join(dist, "gen"), { recursive: true });
rmSync(stage, { recursive: true, force: true });
console.log(`built ${relative(root, dist)}: ${copied.size} generated files and buf/validate`);
