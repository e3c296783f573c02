/**
 * Where a grant's file actions reach (core/file-paths.ts), alone: what each kind of selector
 * covers, which directories lead to one so a member can browse down to it, which entries of a
 * listing they see, which texts are refused as selectors, and when one selector is within another
 * (an approval's narrowing). test/organizations/file-access.test.ts proves the storage and the
 * requests through the service.
 */
import assert from "node:assert/strict";
import { everywhereAccess, filePathAccess, parseFileSelector, selectorWithin } from "../../../core/file-paths.ts";

/** Asserts which of `paths` the selectors allow. */
function allowed(selectors: string[], paths: Record<string, boolean>): void {
  const access = filePathAccess(selectors);
  for (const [path, expected] of Object.entries(paths)) {
    assert.equal(access.allows(path), expected, `${JSON.stringify(selectors)} allows ${JSON.stringify(path)}`);
  }
}

/** Asserts which of `directories` the selectors reach. */
function reached(selectors: string[], directories: Record<string, boolean>): void {
  const access = filePathAccess(selectors);
  for (const [directory, expected] of Object.entries(directories)) {
    assert.equal(access.reaches(directory), expected, `${JSON.stringify(selectors)} reaches ${JSON.stringify(directory)}`);
  }
}

describe("unit: file paths of a grant", () => {
  describe("allows", () => {
    it("lets no selectors, and a manager's access, reach everything, the server's directory included", () => {
      for (const access of [filePathAccess([]), everywhereAccess]) {
        assert.equal(access.everywhere, true);
        for (const path of ["", "server.properties", "plugins/a/b/.c"]) assert.equal(access.allows(path), true);
        assert.equal(access.reaches("world"), true);
        assert.equal(access.visibleEntry("", ".env", false), true);
      }
      assert.equal(filePathAccess(["plugins"]).everywhere, false);
    });

    it("covers a plain path and everything under it, and nothing that only starts with its text", () => {
      allowed(["plugins/Essentials"], {
        "plugins/Essentials": true,
        "plugins/Essentials/config.yml": true,
        "plugins/Essentials/userdata/a/b.yml": true,
        "plugins/Essentials/.hidden": true,
        "plugins/EssentialsX": false,
        "plugins/EssentialsX/config.yml": false,
        "plugins/Essentials.jar": false,
        plugins: false,
        "": false,
        "other/plugins/Essentials": false,
      });
    });

    it("reaches all a folder holds only through a folder selector, never a file glob (moving or deleting a folder with its contents)", () => {
      const folder = filePathAccess(["plugins/Essentials"]);
      assert.deepEqual(
        ["plugins/Essentials", "plugins/Essentials/userdata", "plugins", ""].map((p) => folder.allowsAllUnder(p)),
        [true, true, false, false],
      );
      const subtree = filePathAccess(["plugins/Essentials/**"]);
      assert.deepEqual(
        ["plugins/Essentials", "plugins/Essentials/a/b"].map((p) => subtree.allowsAllUnder(p)),
        [true, true],
      );
      const jars = filePathAccess(["plugins/*.jar"]);
      assert.equal(jars.allows("plugins/Old.jar"), true);
      assert.equal(jars.allowsAllUnder("plugins/Old.jar"), false, "a folder named like a jar could hold anything");
      assert.equal(filePathAccess(["plugins/Essentials"]).allowsAllUnder("plugins/Essentials/../.."), false);
      assert.equal(everywhereAccess.allowsAllUnder(""), true);
    });

    it("is case-sensitive, as the paths on a Linux server are", () => {
      allowed(["plugins/Essentials"], { "plugins/essentials": false, "Plugins/Essentials": false, "PLUGINS/ESSENTIALS/x": false });
      allowed(["plugins/*.jar"], { "plugins/a.jar": true, "plugins/a.JAR": false, "Plugins/a.jar": false });
    });

    it("reads dir/** as dir and everything under it, dotfiles included", () => {
      allowed(["plugins/Essentials/**"], {
        "plugins/Essentials": true,
        "plugins/Essentials/x/y.yml": true,
        "plugins/Essentials/.secret": true,
        "plugins/EssentialsX": false,
        plugins: false,
      });
      allowed(["plugins/*/**"], { "plugins/a": true, "plugins/a/b/c": true, plugins: false, "plugins/.hidden": false });
    });

    it("reads ** alone as everything", () => {
      allowed(["**"], { "": true, a: true, "a/b/c": true, ".git/config": true });
    });

    it("matches any other glob against the whole path, as matchesGlob does", () => {
      allowed(["plugins/*.jar"], {
        "plugins/Essentials.jar": true,
        "plugins/Essentials.jar/inside": false,
        "plugins/sub/a.jar": false,
        "plugins/.hidden.jar": false,
        "plugins/a.jar.bak": false,
        plugins: false,
      });
      allowed(["config/**/*.yml"], { "config/a.yml": true, "config/x/y/a.yml": true, "config/a.json": false, config: false });
      allowed(["*.{yml,properties}"], { "server.properties": true, "bukkit.yml": true, "eula.txt": false, "config/a.yml": false });
      allowed(["world?/level.dat"], { "world1/level.dat": true, "world/level.dat": false, "world12/level.dat": false });
      allowed(["logs/[0-9]*.log"], { "logs/2026-01-01.log": true, "logs/latest.log": false });
    });

    it("covers a path when any one of its selectors does", () => {
      allowed(["plugins/Essentials", "plugins/Essentials*.jar"], {
        "plugins/Essentials/config.yml": true,
        "plugins/EssentialsX-2.20.jar": true,
        "plugins/Other.jar": false,
      });
    });

    it("refuses a path that is not normalized instead of reading it", () => {
      allowed(["plugins/Essentials"], {
        "plugins/Essentials/../../server.properties": false,
        "plugins/Essentials/./config.yml": false,
        "plugins/Essentials//config.yml": false,
        "/plugins/Essentials": false,
        "plugins/Essentials/": false,
        "plugins/Essentials\\config.yml": false,
      });
      allowed(["**"], { "../outside": false, ".": false });
      reached(["plugins/Essentials"], { "plugins/Essentials/..": false, "plugins/": false, ".": false });
    });

    it("lets a ** inside a folder glob span any number of names", () => {
      allowed(["worlds/**/region/**"], {
        "worlds/region": true,
        "worlds/a/region": true,
        "worlds/a/b/region/r.0.0.mca": true,
        "worlds/a/data": false,
        worlds: false,
      });
    });
  });

  describe("reaches", () => {
    it("leads from the root down to a selector, and no further astray", () => {
      reached(["plugins/Essentials/**"], {
        "": true,
        plugins: true,
        "plugins/Essentials": true,
        "plugins/Essentials/userdata": true,
        "plugins/EssentialsX": false,
        world: false,
        "plugins/Other": false,
      });
    });

    it("follows globs in the leading folders, and any depth past a **", () => {
      reached(["plugins/*/config"], { plugins: true, "plugins/a": true, "plugins/a/config": true, "plugins/a/other": false, world: false });
      reached(["config/**/*.yml"], { "": true, config: true, "config/a/b/c": true, other: false });
      reached(["*.yml"], { "": true, plugins: false });
    });

    it("never leads into a folder beside the selector's, however alike its name", () => {
      reached(["plugins/Essentials"], { "plugins/Essentials2": false, "plugins/essentials": false, "plugins/Essentials/x": true });
    });
  });

  describe("visibleEntry", () => {
    it("shows in a listing what is allowed, and folders on the way to a selector", () => {
      const access = filePathAccess(["plugins/Essentials", "plugins/*.jar"]);
      assert.equal(access.visibleEntry("", "plugins", true), true);
      assert.equal(access.visibleEntry("", "plugins", false), false);
      assert.equal(access.visibleEntry("", "server.properties", false), false);
      assert.equal(access.visibleEntry("", "world", true), false);
      assert.equal(access.visibleEntry("plugins", "Essentials", true), true);
      assert.equal(access.visibleEntry("plugins", "EssentialsX", true), false);
      assert.equal(access.visibleEntry("plugins", "EssentialsX.jar", false), true);
      assert.equal(access.visibleEntry("plugins", "notes.txt", false), false);
      assert.equal(access.visibleEntry("plugins/Essentials", "config.yml", false), true);
    });
  });

  describe("parseFileSelector", () => {
    it("keeps relative paths and globs, dropping a trailing /", () => {
      for (const text of ["plugins/Essentials", "plugins/*.jar", "config/**/*.{yml,yaml}", "**", "logs/[0-9]?.log", "a b/c-d_e.f", "Ünïcode/名前"]) {
        assert.deepEqual(parseFileSelector(text), { selector: text });
      }
      assert.deepEqual(parseFileSelector("plugins/Essentials/"), { selector: "plugins/Essentials" });
    });

    it("refuses what could mean another place, or nothing, saying why", () => {
      const refused: Record<string, RegExp> = {
        "/etc/passwd": /leading \//,
        "/": /leading \//,
        "plugins\\Essentials": /backslash/,
        "plugins//Essentials": /empty segment/,
        "plugins/Essentials//": /empty segment/,
        "../secrets": /"\." or "\.\." segment/,
        "plugins/../..": /"\." or "\.\." segment/,
        "./plugins": /"\." or "\.\." segment/,
        "plugins/.": /"\." or "\.\." segment/,
        "a\u0000b": /control or invisible/,
        "a\tb": /control or invisible/,
        "a\u202eb": /control or invisible/,
        "{plugins/a,config}/x": /inside \{…\}/,
      };
      for (const [text, problem] of Object.entries(refused)) {
        const parsed = parseFileSelector(text);
        assert.ok("problem" in parsed, `${JSON.stringify(text)} is refused`);
        assert.match(parsed.problem, problem);
      }
    });
  });

  describe("selectorWithin", () => {
    const within = (narrow: string, wide: string, expected: boolean) =>
      assert.equal(selectorWithin(narrow, wide), expected, `${JSON.stringify(narrow)} within ${JSON.stringify(wide)}`);

    it("keeps a selector within itself and everything within **", () => {
      for (const s of ["plugins", "plugins/*.jar", "config/**/*.yml"]) within(s, s, true);
      for (const s of ["plugins", "a/b/c", "*.yml", "x/**"]) within(s, "**", true);
      within("**", "plugins", false);
    });

    it("narrows a folder to what lies in it, and not to its look-alikes", () => {
      within("plugins/Essentials", "plugins", true);
      within("plugins/Essentials/**", "plugins", true);
      within("plugins/*.jar", "plugins", true);
      within("plugins/**/*.yml", "plugins", true);
      within("plugins/Essentials", "plugins/Essentials/**", true);
      within("plugins/Essentials/**", "plugins/Essentials", true);
      within("plugins", "plugins/Essentials", false);
      within("pluginsX/a", "plugins", false);
      within("plugins/EssentialsX", "plugins/Essentials", false);
      within("Plugins/Essentials", "plugins", false);
      within("*/Essentials", "plugins", false);
    });

    it("narrows a folder glob to folders it matches", () => {
      within("plugins/Essentials", "plugins/*/**", true);
      within("plugins/Essentials/config.yml", "plugins/*/**", true);
      within("plugins/*/**", "plugins/*/**", true);
      within("plugins", "plugins/*/**", false);
      within("plugins/.hidden", "plugins/*/**", false);
      within("config/Essentials", "plugins/*/**", false);
    });

    it("does not narrow a file glob to a plain path, which would also cover what is under it", () => {
      within("plugins/Essentials.jar", "plugins/*.jar", false);
      within("plugins/*.jar", "plugins/*.{jar,zip}", false);
      within("plugins/*.jar/**", "plugins/*.jar", false);
      within("plugins/E*.jar", "plugins/*.jar", false);
    });

    it("answers no when it cannot tell from the text", () => {
      within("worlds/a/region", "worlds/**/region/**", false);
      within("config/a.yml", "config/**/*.yml", false);
      within("plugins/**", "plugins/*/**", false);
    });
  });
});
