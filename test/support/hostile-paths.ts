/** Hostile paths for the files panel's tests: the agent's sandbox (unit) and the files procedures (through Outpost). */
/** `..` as it may be spelled: plain, percent-encoded (once, twice, mixed), look-alikes, padded. */
const parents = ["..", "%2e%2e", "%2E%2E", ".%2e", "%2e.", "%252e%252e", "\uff0e\uff0e", "\u2024\u2024", "\ufe52\ufe52", "\u2025", "..\u200b", ". .", "...", ".. "];

/** `/` as it may be spelled: backslashes, encoded, look-alikes, doubled. */
const separators = ["/", "\\", "%2f", "%2F", "%5c", "%252f", "\u2215", "\uff0f", "\u2044", "\u29f8", "\uff3c", "\u2216", "\ufe68", "//"];

/** Where the hostile paths lead: the canary beside the root. */
const tails = ["outside/canary.txt", "outside"];

/**
 * At least 200 paths that try to leave a server's directory (toward `canary`, a file beside it) or
 * to smuggle in what no path should hold, for the agent's sandbox and the files procedures alike.
 */
export function hostilePaths(canary: string): string[] {
  const paths = new Set<string>();
  for (const parent of parents) {
    for (const separator of separators) {
      for (const tail of tails) {
        const rest = tail.split("/").join(separator);
        paths.add(`${parent}${separator}${rest}`);
        paths.add(`plugins${separator}${parent}${separator}${parent}${separator}${rest}`);
      }
    }
  }
  for (const absolute of [canary, `/${canary}`, "/etc/passwd", "C:/Windows/win.ini", "c:\\boot.ini", "//server/share/x", "\\\\?\\C:\\x", "/", "~/../outside"]) {
    paths.add(absolute);
  }
  for (let code = 0; code < 0x20; code++) paths.add(`plugins/a${String.fromCharCode(code)}b`);
  for (const code of [0x7f, 0x85, 0x2028, 0x2029, 0x200e, 0x202e, 0xfeff, 0xd800]) paths.add(`logs/${String.fromCharCode(code)}latest.log`);
  paths.add("server.properties\u0000../../outside/canary.txt");
  paths.add(`${"a".repeat(256)}/x`);
  paths.add(`${"€".repeat(86)}`);
  paths.add(`${"a/".repeat(2049)}x`);
  paths.add("plugins//x");
  paths.add("./plugins");
  return [...paths];
}
