import assert from "node:assert/strict";
import { existsSync, mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { ZipFile } from "yazl";
import { FileRequestSchema, FileResultSchema } from "../../../../gen/outpost/agent/v1/agent_service_pb.js";
import { createContractValidator } from "../../../../contract/validation.ts";
import { maxDescriptorBytes } from "../../../../agent/files/jar-description.ts";
import { listPlugins, maxPlugins, setPluginEnabled, type PluginInfo } from "../../../../agent/files/plugins.ts";
import { createFileOperations } from "../../../../agent/files/operations.ts";
import { answerFileRequest } from "../../../../agent/files/requests.ts";
import { confinedSandbox } from "../../../../agent/files/sandbox.ts";
import { refuses, useFilesFixture } from "./files-fixture.ts";

/** A real zip (a jar) holding `entries`, made by yazl: deflated unless `stored`. */
async function zipOf(entries: Record<string, string | Buffer>, stored = false): Promise<Buffer> {
  const zip = new ZipFile();
  for (const [name, content] of Object.entries(entries)) zip.addBuffer(Buffer.from(content), name, { compress: !stored });
  zip.end();
  const chunks: Buffer[] = [];
  for await (const chunk of zip.outputStream as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/**
 * `zip` with the central directory's uncompressed size of `name` set to `size`: a header that lies
 * about how much its entry inflates to, as a zip bomb's does.
 */
function withClaimedSize(zip: Buffer, name: string, size: number): Buffer {
  const patched = Buffer.from(zip);
  // Each central directory header: its signature, the uncompressed size at 24, the name's length at 28, the name at 46.
  const signature = Buffer.from([0x50, 0x4b, 0x01, 0x02]);
  for (let at = patched.indexOf(signature); at >= 0; at = patched.indexOf(signature, at + 4)) {
    const nameLength = patched.readUInt16LE(at + 28);
    if (patched.subarray(at + 46, at + 46 + nameLength).toString() === name) {
      patched.writeUInt32LE(size, at + 24);
      return patched;
    }
  }
  throw new Error(`${name} is not in the zip`);
}

const essentials = [
  "name: EssentialsX",
  "version: 2.21.0",
  "author: md678685",
  "authors: [zml, vemacs]",
  "description: The essential plugin suite.",
  "api-version: '1.13'",
].join("\n");

describe("agent files: plugins", () => {
  const files = useFilesFixture();
  const put = (relative: string, content: Buffer | string) => {
    mkdirSync(join(files.root, relative, ".."), { recursive: true });
    writeFileSync(join(files.root, relative), content);
  };
  const byPath = (plugins: PluginInfo[]) => Object.fromEntries(plugins.map((plugin) => [plugin.path, plugin]));

  it("describes Bukkit, Paper and Fabric jars from their descriptors, enabled and disabled, sorted by path", async () => {
    put("plugins/EssentialsX.jar", await zipOf({ "META-INF/MANIFEST.MF": "Manifest-Version: 1.0\n", "plugin.yml": essentials, "com/x/A.class": "x" }));
    put(
      "plugins/Squaremap.jar.disabled",
      await zipOf({ "paper-plugin.yml": "name: squaremap\nversion: 1.10\nauthors:\n  - jpenilla\napi-version: 1.20\n", "plugin.yml": "name: old" }),
    );
    put(
      "mods/lithium.jar",
      await zipOf({
        "fabric.mod.json": JSON.stringify({
          schemaVersion: 1,
          id: "lithium",
          name: "Lithium",
          version: "0.11.2",
          authors: ["JellySquid", { name: "2No2Name", contact: {} }],
          description: "No-compromises game logic optimization mod",
          depends: { fabricloader: ">=0.14", minecraft: ["1.20.1", "1.20.2"] },
        }),
      }),
    );
    put("mods/idonly.jar", await zipOf({ "fabric.mod.json": '{"id": "idonly", "version": "1", "authors": "solo", "depends": {"minecraft": "~1.21"}}' }, true));
    put("plugins/notes.txt", "not a jar");
    put("plugins/Essentials/config.yml", "spawn: true\n");

    const plugins = await listPlugins(await files.sandbox());
    assert.deepEqual(
      plugins.map((plugin) => plugin.path),
      ["mods/idonly.jar", "mods/lithium.jar", "plugins/EssentialsX.jar", "plugins/Squaremap.jar.disabled"],
    );
    const shown = byPath(plugins);
    const { size, modifiedAt, ...essentialsX } = shown["plugins/EssentialsX.jar"];
    assert.deepEqual(essentialsX, {
      path: "plugins/EssentialsX.jar",
      loader: "bukkit",
      name: "EssentialsX",
      version: "2.21.0",
      authors: ["md678685", "zml", "vemacs"],
      description: "The essential plugin suite.",
      apiVersion: "1.13",
      enabled: true,
    });
    assert.ok(size > 0 && modifiedAt instanceof Date);
    assert.deepEqual(
      [shown["plugins/Squaremap.jar.disabled"].loader, shown["plugins/Squaremap.jar.disabled"].name, shown["plugins/Squaremap.jar.disabled"].version],
      ["paper", "squaremap", "1.10"],
      "paper-plugin.yml before plugin.yml, and a version as written (not the number 1.1)",
    );
    assert.equal(shown["plugins/Squaremap.jar.disabled"].apiVersion, "1.20");
    assert.equal(shown["plugins/Squaremap.jar.disabled"].enabled, false);
    const lithium = shown["mods/lithium.jar"];
    assert.deepEqual(
      [lithium.loader, lithium.name, lithium.version, lithium.authors, lithium.apiVersion],
      ["fabric", "Lithium", "0.11.2", ["JellySquid", "2No2Name"], "1.20.1 || 1.20.2"],
    );
    assert.deepEqual([shown["mods/idonly.jar"].name, shown["mods/idonly.jar"].authors, shown["mods/idonly.jar"].apiVersion], ["idonly", ["solo"], "~1.21"]);
    assert.ok(plugins.every((plugin) => plugin.problem === undefined));
  });

  it("lists a jar it cannot read with its problem, named by its file: not a zip, cut short, no descriptor, bad YAML", async () => {
    const good = await zipOf({ "plugin.yml": essentials });
    put("plugins/Text.jar", "this is not a zip file at all");
    put("plugins/Half.jar", good.subarray(0, good.length / 2));
    put("plugins/Empty.jar", "");
    put("plugins/Forge.jar", await zipOf({ "META-INF/mods.toml": "modLoader='javafml'" }));
    put("plugins/BadYaml.jar", await zipOf({ "plugin.yml": "name: [unclosed\nversion: 1" }));
    put("plugins/List.jar", await zipOf({ "plugin.yml": "- just\n- a list\n" }));
    put("mods/BadJson.jar", await zipOf({ "fabric.mod.json": "{ not json" }));
    put("plugins/Fine.jar", good);

    const shown = byPath(await listPlugins(await files.sandbox()));
    for (const path of [
      "plugins/Text.jar",
      "plugins/Half.jar",
      "plugins/Empty.jar",
      "plugins/Forge.jar",
      "plugins/BadYaml.jar",
      "plugins/List.jar",
      "mods/BadJson.jar",
    ]) {
      const plugin = shown[path];
      assert.ok(plugin.problem, `${path} has a problem`);
      assert.equal(plugin.loader, "", path);
      assert.equal(plugin.name, path.split("/")[1].replace(/\.jar$/, ""), "named by its file");
      assert.ok(!plugin.problem.includes(files.root), "the problem names no real path");
    }
    assert.match(shown["plugins/Text.jar"].problem!, /not a jar the agent can read/);
    assert.match(shown["plugins/Forge.jar"].problem!, /holds no paper-plugin\.yml, plugin\.yml or fabric\.mod\.json/);
    assert.match(shown["plugins/BadYaml.jar"].problem!, /plugin\.yml is not valid YAML/);
    assert.match(shown["plugins/List.jar"].problem!, /not a map of fields/);
    assert.match(shown["mods/BadJson.jar"].problem!, /fabric\.mod\.json is not valid JSON/);
    assert.equal(shown["plugins/Fine.jar"].name, "EssentialsX", "one bad jar does not spoil the list");
  });

  it("refuses a descriptor past 256 KiB, whether its header says so or lies about it, without inflating it", async () => {
    const huge = "name: Bomb\ndescription: " + "a".repeat(64 * 1024 * 1024) + "\n";
    const bomb = await zipOf({ "plugin.yml": huge });
    assert.ok(bomb.length < 1024 * 1024, `a ${bomb.length}-byte jar that inflates to 64 MiB`);
    put("plugins/Bomb.jar", bomb);
    put("plugins/Liar.jar", withClaimedSize(bomb, "plugin.yml", 1000));
    put("plugins/Edge.jar", await zipOf({ "plugin.yml": "name: Edge\n#" + "x".repeat(maxDescriptorBytes - 13) + "\n" }));

    const heapBefore = process.memoryUsage().heapUsed;
    const shown = byPath(await listPlugins(await files.sandbox()));
    assert.match(shown["plugins/Bomb.jar"].problem!, /plugin\.yml is larger than 256 KiB/);
    assert.match(shown["plugins/Liar.jar"].problem!, /not a jar the agent can read/, "the lie is caught as it inflates");
    assert.equal(shown["plugins/Edge.jar"].name, "Edge", "exactly 256 KiB is read");
    assert.ok(process.memoryUsage().heapUsed - heapBefore < 32 * 1024 * 1024, "64 MiB were never held");
  });

  it("cuts fields to the contract's bounds, shows a name's control characters as escapes, and answers what core's check accepts", async () => {
    const authors = Array.from({ length: 80 }, (_, i) => `author${i}`);
    const yaml = [
      `name: "Evil\\nName\\u202e${"n".repeat(400)}"`,
      `version: "${"9".repeat(300)}"`,
      `authors: [${authors.join(", ")}, "${"a".repeat(300)}"]`,
      `description: "${"d".repeat(5000)}"`,
    ].join("\n");
    put("plugins/Long.jar", await zipOf({ "plugin.yml": yaml }));
    const [plugin] = await listPlugins(await files.sandbox());
    assert.ok(plugin.name.startsWith("Evil\\x0aName\\u202e"), plugin.name);
    assert.equal(Array.from(plugin.name).length, 256);
    assert.equal(Array.from(plugin.version).length, 256);
    assert.equal(Array.from(plugin.description).length, 2048);
    assert.equal(plugin.authors.length, 50);

    const answer = await answerFileRequest(
      { mode: "on", operations: createFileOperations(await files.sandbox()) },
      create(FileRequestSchema, { requestId: "r1", operation: { case: "listPlugins", value: {} } }),
      () => {},
    );
    assert.equal(answer.result?.case, "plugins");
    const checked = createContractValidator().validate(FileResultSchema, create(FileResultSchema, answer));
    assert.equal(checked.kind, "valid", checked.kind === "valid" ? "" : String(checked.error));
  });

  it("lists nothing when there are no plugins or mods folders, keeps what the deny list hides out, and follows nothing outside", async () => {
    assert.deepEqual(await listPlugins(await files.sandbox()), [], "no folders: no plugins");
    const jar = await zipOf({ "plugin.yml": essentials });
    put("plugins/Visible.jar", jar);
    put("plugins/Secret.jar", jar);
    put("plugins/Folder.jar/plugin.yml", essentials);
    writeFileSync(join(files.outside, "Outside.jar"), jar);
    symlinkSync(join(files.outside, "Outside.jar"), join(files.root, "plugins/Outside.jar"));
    symlinkSync("Visible.jar", join(files.root, "plugins/Inside.jar"));

    const plugins = await listPlugins(await files.sandbox({ deny: ["plugins/Secret.jar"] }));
    const shown = byPath(plugins);
    assert.deepEqual(Object.keys(shown), ["plugins/Inside.jar", "plugins/Outside.jar", "plugins/Visible.jar"], "no denied jar, no folder");
    assert.equal(shown["plugins/Inside.jar"].name, "EssentialsX", "a link inside the directory is followed");
    assert.match(shown["plugins/Outside.jar"].problem!, /outside the server's directory/);
    assert.equal(shown["plugins/Outside.jar"].loader, "");

    const confined = byPath(await listPlugins(confinedSandbox(await files.sandbox())));
    assert.match(confined["plugins/Inside.jar"].problem!, /symlink/, "a confined caller follows no link");
    await refuses(listPlugins(await files.sandbox({ mode: "off" })), "files_off");
  });

  it(`lists at most ${maxPlugins} jars, the first by path`, async () => {
    mkdirSync(join(files.root, "plugins"));
    for (let i = 0; i < maxPlugins + 5; i++) writeFileSync(join(files.root, "plugins", `p${String(i).padStart(4, "0")}.jar`), "x");
    const plugins = await listPlugins(await files.sandbox());
    assert.equal(plugins.length, maxPlugins);
    assert.equal(plugins[maxPlugins - 1].path, `plugins/p${String(maxPlugins - 1).padStart(4, "0")}.jar`);
  });

  it("disables and enables a jar by renaming it in its folder, and answers it as it is now", async () => {
    put("plugins/EssentialsX.jar", await zipOf({ "plugin.yml": essentials }));
    const sandbox = await files.sandbox();
    const disabled = await setPluginEnabled(sandbox, "plugins/EssentialsX.jar", false);
    assert.deepEqual([disabled.path, disabled.enabled, disabled.name], ["plugins/EssentialsX.jar.disabled", false, "EssentialsX"]);
    assert.ok(existsSync(join(files.root, "plugins/EssentialsX.jar.disabled")) && !existsSync(join(files.root, "plugins/EssentialsX.jar")));

    const again = await setPluginEnabled(sandbox, "plugins/EssentialsX.jar.disabled", false);
    assert.equal(again.path, "plugins/EssentialsX.jar.disabled", "already disabled: nothing renamed");

    const enabled = await setPluginEnabled(sandbox, "plugins/EssentialsX.jar.disabled", true);
    assert.deepEqual([enabled.path, enabled.enabled, enabled.version], ["plugins/EssentialsX.jar", true, "2.21.0"]);
    assert.ok(existsSync(join(files.root, "plugins/EssentialsX.jar")));
  });

  it("renames only a jar in plugins/ or mods/, never onto another, and only where writing is allowed", async () => {
    const jar = await zipOf({ "plugin.yml": essentials });
    put("plugins/A.jar", jar);
    put("plugins/A.jar.disabled", jar);
    put("plugins/sub/B.jar", jar);
    put("config/C.jar", jar);
    put("plugins/Folder.jar/x", "x");
    const sandbox = await files.sandbox();
    await refuses(setPluginEnabled(sandbox, "plugins/A.jar", false), "already_exists");
    assert.ok(existsSync(join(files.root, "plugins/A.jar")), "both left as they were");
    for (const path of ["plugins/sub/B.jar", "config/C.jar", "plugins/x.zip", "plugins/.jar", "plugins", "server.properties"]) {
      await refuses(setPluginEnabled(sandbox, path, false), "invalid_path");
    }
    await refuses(setPluginEnabled(sandbox, "../outside/x.jar", false), "outside_root");
    await refuses(setPluginEnabled(sandbox, "plugins/Missing.jar", false), "not_found");
    await refuses(setPluginEnabled(sandbox, "plugins/Folder.jar", false), "not_a_regular_file");
    await refuses(setPluginEnabled(await files.sandbox({ mode: "read-only" }), "plugins/A.jar.disabled", true), "read_only");
    put("plugins/D.jar", jar);
    await refuses(setPluginEnabled(await files.sandbox({ deny: ["plugins/*.disabled"] }), "plugins/D.jar", false), "denied");
    assert.ok(existsSync(join(files.root, "plugins/D.jar")));
  });
});
