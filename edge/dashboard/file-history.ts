/**
 * A file's history: the versions the agent kept as Outpost replaced or deleted the file
 * (servers/listFileHistory), newest first, each restorable (servers/restoreFileVersion, which
 * keeps the current version as one in turn, so a restore loses nothing).
 */
import type { Router } from "@koa/router";
import type { Context } from "koa";
import type { FileVersion } from "../../gen/outpost/servers/v1/resources_pb.js";
import { action, confirmed, done, page, render, type ActionHandler, type DashboardDeps, type Viewer } from "./context.ts";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { byteSize, utcText, when } from "./format.ts";
import { dangerForm } from "./forms.ts";
import { html, type Html } from "../html.ts";
import { orgPath } from "./paths.ts";
import { baseName, fileProblemOrThrow, fileReachOf, filesPath, folderTrail, parentOf, problemAlert, serverOf, type FileProblem } from "./files-context.ts";

async function historyPage(ctx: Context, v: Viewer, path: string, refused?: FileProblem): Promise<void> {
  const { org, server } = await serverOf(ctx, v);
  const reach = await fileReachOf(v, org, server);
  let versions: FileVersion[] | undefined;
  let problem = refused;
  try {
    ({ versions } = await v.core.servers.listFileHistory({ serverId: server.id, path }));
  } catch (error) {
    problem ??= fileProblemOrThrow(error);
  }
  const rows = (versions ?? []).map(
    (version) =>
      html`<tr><td>${when(version.savedAt)}</td><td>${byteSize(version.size)}</td><td class="mono" title="${version.sha256}">${version.sha256.slice(0, 12)}…</td><td class="row-actions">${
        reach.write
          ? dangerForm({
              action: filesPath(org, server.id, "/restore"),
              token: v.formToken,
              label: "Restore",
              ariaLabel: `Restore the version set aside ${version.savedAt ? utcText(timestampDate(version.savedAt)) : version.id}`,
              confirm: `Restore this version of "${baseName(path)}"?`,
              consequence: "It replaces the file as it is now; the current version is kept in this history.",
              fields: { path, versionId: version.id },
              buttonClass: "small",
            })
          : ""
      }</td></tr>`,
  );
  const table: Html = rows.length
    ? html`<div class="table-wrap" role="region" tabindex="0" aria-label="Kept versions"><table><caption class="sr-only">Kept versions of ${path}</caption><thead><tr><th scope="col">Set aside</th><th scope="col">Size</th><th scope="col">SHA-256</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead><tbody>${rows}</tbody></table></div>`
    : html`<p class="empty">${versions ? "No earlier versions are kept." : ""}</p>`;
  render(
    ctx,
    v,
    {
      title: `History of "${baseName(path)}"`,
      org,
      section: "servers",
      crumbs: [
        { href: orgPath(org, "/servers"), label: "Servers" },
        { href: orgPath(org, `/servers/${server.id}`), label: server.name },
        { href: filesPath(org, server.id), label: "Files" },
      ],
      lede: html`The versions the agent kept as Outpost replaced or deleted <a href="${filesPath(org, server.id, "/edit", { path })}" class="mono">${path}</a>, newest first.`,
      body: html`${folderTrail(org, server.id, parentOf(path), true)}<section class="panel stack" aria-label="History">${problemAlert(problem)}${versions ? table : ""}</section>`,
    },
    refused?.status ?? (problem ? problem.status : 200),
  );
}

const restoreVersion: ActionHandler = async (ctx, v, form) => {
  const path = form.get("path") ?? "";
  const versionId = form.get("versionId") ?? "";
  const { org, server } = await serverOf(ctx, v);
  const question = {
    title: `Restore this version of "${baseName(path)}"?`,
    consequence: "It replaces the file as it is now; the current version is kept in the history.",
    label: "Restore",
    cancel: filesPath(org, server.id, "/history", { path }),
    org,
  };
  if (!confirmed(ctx, v, form, question)) return;
  try {
    await v.core.servers.restoreFileVersion({ serverId: server.id, path, versionId });
  } catch (error) {
    return historyPage(ctx, v, path, fileProblemOrThrow(error));
  }
  done(ctx, filesPath(org, server.id, "/edit", { path }), "version-restored");
};

export function historyRoutes(router: Router, deps: DashboardDeps): void {
  router.get(
    "/app/o/:slug/servers/:id/files/history",
    page(deps, (ctx, v) => historyPage(ctx, v, typeof ctx.query.path === "string" ? ctx.query.path : "")),
  );
  router.post("/app/o/:slug/servers/:id/files/restore", action(deps, restoreVersion));
}
