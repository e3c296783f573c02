/**
 * A server's plugins and mods as their jars describe themselves (servers/listPlugins), each
 * enabled or disabled by renaming its jar (servers/setPluginEnabled), which the game server loads
 * at its next start. Installing one is an upload into plugins/ or mods/ in the file browser.
 */
import type { Router } from "@koa/router";
import type { Context } from "koa";
import type { Plugin } from "../../gen/outpost/servers/v1/resources_pb.js";
import { action, done, noticeOf, page, render, type ActionHandler, type DashboardDeps, type Viewer } from "./context.ts";
import { byteSize } from "./format.ts";
import { postForm } from "./forms.ts";
import { html, type Html } from "../html.ts";
import { orgPath } from "./paths.ts";
import { fileProblemOrThrow, fileReachOf, folderHref, problemAlert, serverOf, type FileProblem, type FileReach } from "./files-context.ts";

function pluginRow(v: Viewer, action: string, p: Plugin, reach: FileReach): Html {
  const toggle = reach.write
    ? postForm(
        action,
        v.formToken,
        html`<input type="hidden" name="path" value="${p.path}"><input type="hidden" name="enabled" value="${p.enabled ? "no" : "yes"}"><button type="submit" class="btn small" aria-label="${p.enabled ? "Disable" : "Enable"} ${p.name}">${p.enabled ? "Disable" : "Enable"}</button>`,
        html` class="inline"`,
      )
    : "";
  return html`<tr><td><strong>${p.name}</strong>${p.description ? html`<p class="hint">${p.description}</p>` : ""}</td><td>${p.version || html`<span class="muted">—</span>`}</td><td>${p.loader || html`<span class="muted">—</span>`}</td><td>${p.authors.join(", ") || html`<span class="muted">—</span>`}</td><td class="mono">${p.path} <span class="muted">(${byteSize(p.size)})</span></td><td>${p.enabled ? html`<span class="status online">Enabled</span>` : html`<span class="status offline">Disabled</span>`}</td><td class="row-actions">${toggle}</td></tr>`;
}

async function pluginsPage(ctx: Context, v: Viewer, refused?: FileProblem): Promise<void> {
  const { org, server } = await serverOf(ctx, v);
  const reach = await fileReachOf(v, org, server);
  let plugins: Plugin[] | undefined;
  let problem = refused;
  try {
    ({ plugins } = await v.core.servers.listPlugins({ serverId: server.id }));
  } catch (error) {
    problem ??= fileProblemOrThrow(error);
  }
  const toggle = orgPath(org, `/servers/${server.id}/plugins/enabled`);
  const rows = (plugins ?? []).map((p) => pluginRow(v, toggle, p, reach));
  render(
    ctx,
    v,
    {
      title: "Plugins and mods",
      org,
      section: "servers",
      notice: noticeOf(ctx),
      crumbs: [
        { href: orgPath(org, "/servers"), label: "Servers" },
        { href: orgPath(org, `/servers/${server.id}`), label: server.name },
      ],
      lede: html`As their jars in <a href="${folderHref(org, server.id, "plugins")}" class="mono">plugins/</a> and <a href="${folderHref(org, server.id, "mods")}" class="mono">mods/</a> describe themselves. A change takes effect at the server's next restart; to install one, upload its jar into one of those folders.`,
      body: html`<section class="panel stack" aria-label="Plugins and mods">${problemAlert(problem)}${
        rows.length
          ? html`<div class="table-wrap" role="region" tabindex="0" aria-label="Plugins and mods of ${server.name}"><table><caption class="sr-only">Plugins and mods of ${server.name}</caption><thead><tr><th scope="col">Name</th><th scope="col">Version</th><th scope="col">Loader</th><th scope="col">Authors</th><th scope="col">Jar</th><th scope="col">State</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead><tbody>${rows}</tbody></table></div>`
          : plugins
            ? html`<p class="empty">No plugins or mods are installed.</p>`
            : ""
      }</section>`,
    },
    refused?.status ?? (problem ? problem.status : 200),
  );
}

const setEnabled: ActionHandler = async (ctx, v, form) => {
  const enabled = form.get("enabled") === "yes";
  const { org, server } = await serverOf(ctx, v);
  try {
    await v.core.servers.setPluginEnabled({ serverId: server.id, path: form.get("path") ?? "", enabled });
  } catch (error) {
    return pluginsPage(ctx, v, fileProblemOrThrow(error));
  }
  done(ctx, orgPath(org, `/servers/${server.id}/plugins`), enabled ? "plugin-enabled" : "plugin-disabled");
};

export function pluginRoutes(router: Router, deps: DashboardDeps): void {
  router.get(
    "/app/o/:slug/servers/:id/plugins",
    page(deps, (ctx, v) => pluginsPage(ctx, v)),
  );
  router.post("/app/o/:slug/servers/:id/plugins/enabled", action(deps, setEnabled));
}
