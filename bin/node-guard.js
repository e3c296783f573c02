// Plain JavaScript that any Node.js can parse: Outpost's own code is TypeScript run by Node's
// type stripping (Node >= 22.18). Started by an older Node, re-run the command on the Node that
// npm installed beside the project (an optional dependency), or say clearly what is missing.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const [major, minor] = process.versions.node.split(".").map(Number);

/** True when this Node can run Outpost; otherwise re-runs `script` elsewhere and returns false. */
export function nodeIsRecentEnough(script) {
  if (major > 22 || (major === 22 && minor >= 18)) return true;
  const bundled = fileURLToPath(new URL("../node_modules/.bin/node", import.meta.url));
  if (!existsSync(bundled)) {
    console.error(`error: Outpost needs Node.js 22.18 or newer (this is ${process.version}); run npm install, or install a newer Node.js`);
    process.exit(1);
  }
  // Node's sizing options (`node --v8-pool-size=0 bin/outpost.js serve`, as npm start runs it) go
  // along; no others: an inspector would bind its port twice, a preload would run twice, and an
  // option this Node knows may be one the newer Node refuses.
  const sizing = process.execArgv.filter((option) => /^--(v8-pool-size|max-old-space-size|max-semi-space-size)=\d+$/.test(option));
  const child = spawn(bundled, [...sizing, fileURLToPath(script), ...process.argv.slice(2)], { stdio: "inherit" });
  for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => child.kill(signal));
  child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
  return false;
}
