/**
 * Servers: the list with live status (server-status.ts, which the page script polls every 2 s) and
 * whether each can sign players in, creation with the agent key and the command to run shown
 * once, and each server's page: its players and console (console.ts), its files (files.ts and
 * beside it), rename, the agent key, members' access grants (server-access.ts), delete.
 */
import type { Router } from "@koa/router";
import type { Context } from "koa";
import { Code, ConnectError } from "@connectrpc/connect";
import { Game, type Server } from "../../gen/outpost/servers/v1/resources_pb.js";
import { ServerAction, type Organization } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { action, confirmed, done, noticeOf, orgOf, page, render, type ActionHandler, type DashboardDeps, type Viewer } from "./context.ts";
import { formErrorsOrThrow, hasCode, type FormErrors } from "./core.ts";
import { canManage, gameFlag, gameName, when } from "./format.ts";
import { choiceGroup, dangerForm, formAlert, postForm, textField } from "./forms.ts";
import { html, type Html } from "../html.ts";
import { chartAssets, copyValue, secretBlock } from "./layout.ts";
import { playerTrends, rangeOf, serverChartRoutes, statsPanel } from "./server-charts.ts";
import { orgPath } from "./paths.ts";
import { accessRoutes, accessSection, noAccessPage } from "./server-access.ts";
import { consolePanel, consoleRoutes, playersSection } from "./console.ts";
import type { ServerPage, ServerPageState } from "./server-page.ts";
import { consoleEventRoutes } from "./console-events.ts";
import { fileRoutes } from "./files.ts";
import { filesPanel } from "./files-views.ts";
import { editorRoutes } from "./file-editor.ts";
import { uploadRoutes } from "./file-upload.ts";
import { historyRoutes } from "./file-history.ts";
import { pluginRoutes } from "./plugins.ts";
import { lifecyclePanel, lifecycleRoutes } from "./lifecycle.ts";
import { scheduleRoutes, schedulesLink } from "./schedules.ts";
import { frozenBadge, frozenNote, frozenSection, liveStatus, players, statusBadge, statusSection, trustBadge } from "./server-status.ts";

/** The exact command that runs the agent for a server with this key. */
export function agentCommand(v: Viewer, game: Game, key: string): string {
  const base = `npx outpost-agent run --url ${v.deps.accountBaseUrl.origin} --key ${key}`;
  return game === Game.HYTALE ? `${base} --game ${gameFlag(game)}` : base;
}

function createForm(v: Viewer, org: Organization, values: { name?: string; game?: string } = {}, errors?: FormErrors): Html {
  return postForm(
    orgPath(org, "/servers"),
    v.formToken,
    html`${formAlert(errors, ["name", "game"])}
${textField({ name: "name", label: "Server name", value: values.name, required: true, maxlength: 64, errors })}
${choiceGroup({
  name: "game",
  legend: "Game",
  type: "radio",
  options: [
    { value: "minecraft", label: "Minecraft" },
    { value: "hytale", label: "Hytale" },
  ],
  checked: new Set([values.game ?? "minecraft"]),
  errors,
})}
<div class="actions"><button type="submit" class="btn primary">Create server</button></div>`,
    html` class="panel stack" aria-labelledby="create-server-heading"`,
  );
}

async function listPage(ctx: Context, v: Viewer, values?: { name?: string; game?: string }, errors?: FormErrors, status = 200): Promise<void> {
  const org = orgOf(v, ctx.params.slug);
  const [{ servers }, trends] = await Promise.all([v.core.servers.listServers({ organizationSlug: org.slug }), playerTrends(v, org)]);
  const manage = canManage(org.role);
  const rows = servers.map(
    (s) =>
      html`<tr data-server-id="${s.id}" data-server-name="${s.name}"><td><a href="${orgPath(org, `/servers/${s.id}`)}">${s.name}</a>${frozenBadge(s)}</td><td>${gameName(s.game)}</td><td>${statusBadge(s)}</td><td>${players(s)}</td><td>${trends(s)}</td><td>${trustBadge(s)}</td><td data-field="last-seen">${when(s.lastSeenAt, "Never")}</td></tr>`,
  );
  render(
    ctx,
    v,
    {
      title: "Servers",
      org,
      section: "servers",
      notice: noticeOf(ctx),
      lede: manage ? "Every game server of the organization. Status and players update live." : "The servers you have been granted. Status and players update live.",
      body: html`${frozenNote(servers, manage)}${
        servers.length
          ? html`<div class="table-wrap" data-live-status="${orgPath(org, "/servers/status")}" role="region" tabindex="0" aria-label="Servers of ${org.name}"><table><caption class="sr-only">Servers of ${org.name}</caption><thead><tr><th scope="col">Name</th><th scope="col">Game</th><th scope="col">Status</th><th scope="col">Players</th><th scope="col">Last day</th><th scope="col">Sign-in</th><th scope="col">Last seen</th></tr></thead><tbody>${rows}</tbody></table></div>`
          : html`<p class="empty">${manage ? "No servers yet. Create the first one below." : "No servers are shared with you yet. Ask an owner or admin of the organization for access."}</p>`
      }
${manage ? html`<h2 id="create-server-heading">Create a server</h2>${createForm(v, org, values, errors)}` : ""}`,
    },
    status,
  );
}

/** The page that shows a new agent key once, with the command that uses it. */
function keyPage(ctx: Context, v: Viewer, org: Organization, server: Server, key: string, created: boolean): void {
  render(ctx, v, {
    title: created ? `Server "${server.name}" created` : `New agent key for "${server.name}"`,
    org,
    section: "servers",
    crumbs: [{ href: orgPath(org, "/servers"), label: "Servers" }],
    lede: created
      ? "Run the agent on the game server's machine with this key; the server turns online here as it connects."
      : "The old key stopped working; its agent was disconnected. Restart the agent with this key.",
    body: html`<section class="panel stack reveal" aria-labelledby="key-heading">
<h2 id="key-heading">Agent key</h2>
${secretBlock("agent-key", "Agent key", key, "It is shown only this once: Outpost keeps only a hash. If you lose it, regenerate it on the server's page.")}
${copyValue("agent-command", "Command to run the agent", agentCommand(v, server.game, key))}
<p class="hint">Add <span class="mono">--auth offline</span> if the game server does not verify player accounts. Run <span class="mono">npx outpost-agent</span> without arguments for its options.</p>
<div class="actions"><a class="btn primary" href="${orgPath(org, `/servers/${server.id}`)}">Go to the server</a> <a class="btn ghost" href="${orgPath(org, "/servers")}">All servers</a></div>
</section>`,
  });
}

/** Rename, the agent key, access and delete: for owners and admins. */
function manageSections(v: Viewer, org: Organization, s: Server, state: ServerPageState, grantsSection: Html): Html {
  const base = orgPath(org, `/servers/${s.id}`);
  const rename = state.rename;
  return html`<section class="panel stack" aria-labelledby="rename-heading">
<h2 id="rename-heading">Rename</h2>
${postForm(
  `${base}/rename`,
  v.formToken,
  html`${formAlert(rename?.errors, ["name"])}${textField({ name: "name", label: "Server name", value: rename?.value ?? s.name, required: true, maxlength: 64, errors: rename?.errors })}
<div class="actions"><button type="submit" class="btn">Save name</button></div>`,
  html` class="stack"`,
)}
</section>
<section class="panel stack" aria-labelledby="agent-heading">
<h2 id="agent-heading">Agent key</h2>
<p>The key starting <span class="mono">${s.agentKeyPrefix}</span> connects this server's agent. Regenerate it if it leaked: the old key stops working and its agent is disconnected at once.</p>
${dangerForm({ action: `${base}/regenerate-key`, token: v.formToken, label: "Regenerate agent key", confirm: `Regenerate the agent key of ${s.name}?`, consequence: "The current key stops working at once and the connected agent is disconnected." })}
</section>
${schedulesLink(org, s.id)}
${grantsSection}
<section class="panel danger-zone" aria-labelledby="delete-heading">
<h2 id="delete-heading">Delete server</h2>
<p>Its grants go with it and its agent is disconnected. Game OAuth clients stop accepting sign-ins verified by it.</p>
${dangerForm({ action: `${base}/delete`, token: v.formToken, label: "Delete server", confirm: `Delete the server "${s.name}"?`, consequence: "Its grants go with it and its agent is disconnected. This cannot be undone." })}
</section>`;
}

const serverPage: ServerPage = async (ctx, v, state = {}, status = 200) => {
  const org = orgOf(v, ctx.params.slug);
  const manage = canManage(org.role);
  let s: Server;
  try {
    s = (await v.core.servers.getServer({ serverId: ctx.params.id })).server!;
  } catch (error) {
    // A member without access (none, expired, used up) is told why and may ask for it.
    if (!hasCode(error, Code.PermissionDenied) || manage) throw error;
    return noAccessPage(ctx, v, org, ctx.params.id, (error as ConnectError).rawMessage);
  }
  const [playersPanel, chartsPanel, grantsSection, granted] = await Promise.all([
    playersSection(v, s),
    statsPanel(v, org, s.id, rangeOf(ctx)),
    manage ? accessSection(v, org, s, state.grant) : html``,
    manage ? undefined : grantedActions(v, org, s.id),
  ]);
  const may = (...actions: ServerAction[]) => !granted || actions.some((a) => granted.has(a));
  render(
    ctx,
    v,
    {
      title: s.name,
      org,
      section: "servers",
      notice: noticeOf(ctx),
      crumbs: [{ href: orgPath(org, "/servers"), label: "Servers" }],
      scripts: ["console.js", ...chartAssets.scripts],
      styles: chartAssets.styles,
      body: html`${frozenSection(s, manage)}${statusSection(org, s)}
${playersPanel}
${chartsPanel}
${s.frozen ? "" : may(ServerAction.CONSOLE_READ, ServerAction.CONSOLE_COMMAND) ? consolePanel(v, org, s, state.console) : noConsolePanel(org, s)}
${!s.frozen && may(ServerAction.LIFECYCLE) ? lifecyclePanel(v, org, s, state.lifecycle) : ""}
${may(ServerAction.FILES_READ, ServerAction.FILES_WRITE) ? filesPanel(org, s) : ""}
${manage ? manageSections(v, org, s, state, grantsSection) : ""}`,
    },
    status,
  );
};

/** What the member's grant to the server includes (the console, its files). */
async function grantedActions(v: Viewer, org: Organization, serverId: string): Promise<Set<ServerAction>> {
  const { accessGrants } = await v.core.organizations.getCurrentMember({ organizationSlug: org.slug });
  return new Set(accessGrants.filter((g) => g.serverId === serverId).flatMap((g) => g.actions));
}

function noConsolePanel(org: Organization, s: Server): Html {
  return html`<section class="panel stack" aria-labelledby="console-heading">
<h2 id="console-heading">Console</h2>
<p class="hint">Your grant to this server does not include its console. <a href="${orgPath(org, `/servers/${s.id}/request`)}">Ask for more access</a>.</p>
</section>`;
}

const games: Record<string, Game> = { minecraft: Game.MINECRAFT, hytale: Game.HYTALE };

const createServer: ActionHandler = async (ctx, v, form) => {
  const org = orgOf(v, ctx.params.slug);
  const name = (form.get("name") ?? "").trim();
  const game = form.get("game") ?? "";
  try {
    const res = await v.core.servers.createServer({ organizationSlug: org.slug, name, game: games[game] ?? Game.UNSPECIFIED });
    keyPage(ctx, v, org, res.server!, res.agentKey, true);
  } catch (error) {
    await listPage(ctx, v, { name, game }, formErrorsOrThrow(error), 400);
  }
};

const renameServer: ActionHandler = async (ctx, v, form) => {
  const org = orgOf(v, ctx.params.slug);
  const name = (form.get("name") ?? "").trim();
  try {
    await v.core.servers.updateServer({ serverId: ctx.params.id, name });
    done(ctx, orgPath(org, `/servers/${ctx.params.id}`), "server-renamed");
  } catch (error) {
    if (hasCode(error, Code.NotFound)) throw error;
    await serverPage(ctx, v, { rename: { errors: formErrorsOrThrow(error), value: name } }, 400);
  }
};

const regenerateKey: ActionHandler = async (ctx, v, form) => {
  const org = orgOf(v, ctx.params.slug);
  if (
    !confirmed(ctx, v, form, {
      title: "Regenerate the agent key?",
      consequence: "The current key stops working at once and the connected agent is disconnected.",
      label: "Regenerate agent key",
      cancel: orgPath(org, `/servers/${ctx.params.id}`),
      org,
    })
  )
    return;
  const res = await v.core.servers.regenerateAgentKey({ serverId: ctx.params.id });
  keyPage(ctx, v, org, res.server!, res.agentKey, false);
};

const deleteServer: ActionHandler = async (ctx, v, form) => {
  const org = orgOf(v, ctx.params.slug);
  if (
    !confirmed(ctx, v, form, {
      title: "Delete this server?",
      consequence: "Its grants go with it and its agent is disconnected. This cannot be undone.",
      label: "Delete server",
      cancel: orgPath(org, `/servers/${ctx.params.id}`),
      org,
    })
  )
    return;
  await v.core.servers.deleteServer({ serverId: ctx.params.id });
  done(ctx, orgPath(org, "/servers"), "server-deleted");
};

export function serverRoutes(router: Router, deps: DashboardDeps): void {
  router.get(
    "/app/o/:slug/servers",
    page(deps, (ctx, v) => listPage(ctx, v)),
  );
  router.get("/app/o/:slug/servers/status", (ctx) => liveStatus(ctx, deps));
  router.post("/app/o/:slug/servers", action(deps, createServer));
  router.get(
    "/app/o/:slug/servers/:id",
    page(deps, (ctx, v) => serverPage(ctx, v)),
  );
  router.get(
    "/app/o/:slug/servers/:id/request",
    page(deps, (ctx, v) => noAccessPage(ctx, v, orgOf(v, ctx.params.slug), ctx.params.id, "Ask the owners and admins for more access to this server.", undefined, 200)),
  );
  router.post("/app/o/:slug/servers/:id/rename", action(deps, renameServer));
  router.post("/app/o/:slug/servers/:id/regenerate-key", action(deps, regenerateKey));
  router.post("/app/o/:slug/servers/:id/delete", action(deps, deleteServer));
  accessRoutes(router, deps, serverPage);
  consoleRoutes(router, deps, serverPage);
  lifecycleRoutes(router, deps, serverPage);
  scheduleRoutes(router, deps);
  serverChartRoutes(router, deps);
  consoleEventRoutes(router, deps);
  fileRoutes(router, deps);
  editorRoutes(router, deps);
  uploadRoutes(router, deps);
  historyRoutes(router, deps);
  pluginRoutes(router, deps);
}
