/**
 * The plugins panel (servers/listPlugins, setPluginEnabled): a server's plugins and mods as their
 * jars describe themselves, and switching one on or off by renaming its jar, through the agent
 * and the same three checks as every files procedure (file-methods.ts). A plugin is a file: a
 * member lists the jars their files_read grant reaches, and switches one with files_write on both
 * of its names (`X.jar` and `X.jar.disabled`), as a move of the one to the other would need.
 */
import type { HandlerContext } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  ListPluginsResponseSchema,
  SetPluginEnabledResponseSchema,
  type ListPluginsRequest,
  type ServersService,
  type SetPluginEnabledRequest,
} from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { pluginFolders, pluginJar } from "../../contract/plugin-jar.ts";
import { fail } from "../errors.ts";
import type { FilePathAccess } from "../file-paths.ts";
import type { FileOperation } from "../agents/connection-files.ts";
import { filePath, recordChange, resultOf, runFileCall, type FileDeps } from "./file-methods.ts";

/**
 * The jars in plugins/ and mods/. The caller's access must reach one of the two folders (a grant of
 * `plugins/*.jar` does); the agent lists them all, and a member sees those their grant allows.
 */
export async function listPlugins(deps: FileDeps, req: ListPluginsRequest, ctx: HandlerContext) {
  const operation = (access: FilePathAccess): FileOperation => {
    if (!pluginFolders.some((folder) => access.reaches(folder))) {
      throw fail("permission_denied", "your access grant to this server reaches neither plugins/ nor mods/; ask an owner or admin for it");
    }
    return { case: "listPlugins", value: {} };
  };
  const outcome = await runFileCall(deps, req, ctx, { access: "read", paths: [], operation });
  const { plugins } = resultOf(outcome, "plugins");
  return create(ListPluginsResponseSchema, { plugins: plugins.filter((plugin) => outcome.access.allows(plugin.path)) });
}

/**
 * Renames the jar at `path` to its enabled or disabled name, and answers it as it is now. The game
 * server loads plugins when it starts, so the answer always asks for a restart: whether the running
 * server still has the jar's old state loaded is not something Outpost can see. A change is an
 * activity event; asking for the state a jar is already in changes nothing and records nothing.
 */
export async function setPluginEnabled(deps: FileDeps, req: SetPluginEnabledRequest, ctx: HandlerContext) {
  const path = filePath(req.path);
  const jar = pluginJar(path);
  if (!jar) throw fail("invalid_path", `${JSON.stringify(path)} is not a jar in plugins/ or mods/ (X.jar, or X.jar.disabled when it is disabled)`);
  const outcome = await runFileCall(deps, req, ctx, {
    access: "write",
    paths: [jar.enabledPath, jar.disabledPath],
    operation: { case: "setPluginEnabled", value: { path, enabled: req.enabled } },
  });
  const plugin = resultOf(outcome, "plugin");
  if (plugin.path !== path) {
    await recordChange(deps, outcome, plugin.enabled ? "server.plugin_enabled" : "server.plugin_disabled", {
      path: plugin.path,
      from: path,
      name: plugin.name,
      ...(plugin.version && { version: plugin.version }),
    });
  }
  return create(SetPluginEnabledResponseSchema, { plugin, restartRequired: true });
}

/** The plugins procedures, for ServersService. */
export function pluginMethods(deps: FileDeps): Pick<ServiceImpl<typeof ServersService>, "listPlugins" | "setPluginEnabled"> {
  return {
    listPlugins: (req, ctx) => listPlugins(deps, req, ctx),
    setPluginEnabled: (req, ctx) => setPluginEnabled(deps, req, ctx),
  };
}
