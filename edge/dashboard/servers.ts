/**
 * Servers: the list with live status (the page script polls `servers/status` every 2 s) and
 * whether each can sign players in, creation with the agent key and the command to run shown
 * once, and each server's page: its players and console (console.ts), rename, the agent key,
 * members' access grants (server-access.ts), delete.
 */
import type { Router } from "@koa/router";
import type { Context } from "koa";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { readSessionCookie } from "../cookies.ts";
import { errorBody, isUnexplainedFailure } from "../errors.ts";
import { Game, type Server } from "../../gen/outpost/servers/v1/resources_pb.js";
import { ServerAction, type Organization } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { playerTrust } from "../player-trust.ts";
import { action, confirmed, done, noticeOf, orgOf, page, render, type ActionHandler, type DashboardDeps, type Viewer } from "./context.ts";
import { coreFor, formErrorsOrThrow, hasCode, type FormErrors } from "./core.ts";
import { canManage, gameFlag, gameName, when } from "./format.ts";
import { choiceGroup, dangerForm, formAlert, postForm, textField } from "./forms.ts";
import { html, type Html } from "../html.ts";
import { copyValue, secretBlock } from "./layout.ts";
import { orgPath } from "./paths.ts";
import { accessRoutes, accessSection, noAccessPage } from "./server-access.ts";
import { consolePanel, consoleRoutes, playersSection } from "./console.ts";
import type { ServerPage, ServerPageState } from "./server-page.ts";
import { consoleEventRoutes } from "./console-events.ts";

/** Whether the server can sign players in, as a badge (the words are edge/player-trust.ts's). */
function trustBadge(s: Server): Html {
  const trust = playerTrust(s.playerAuth, s.signInAllowed);
  return html`<span class="trust ${trust.tone}" data-field="trust">${trust.label}</span>`;
}

function statusBadge(s: Server): Html {
  return html`<span class="status ${s.online ? "online" : "offline"}" data-field="status">${s.online ? "Online" : "Offline"}</span>`;
}

/** A frozen server's badge: its organization has more servers than its plan allows (core/servers/frozen.ts). */
function frozenBadge(s: Server): Html {
  return s.frozen ? html` <span class="badge frozen" data-field="frozen">Frozen</span>` : html``;
}

/** What freezing means and what to do, above the list when any server of it is frozen. */
function frozenNote(servers: Server[], manage: boolean): Html {
  const frozen = servers.filter((s) => s.frozen);
  if (!frozen.length) return html``;
  const what = manage
    ? "Raise the plan (ask a platform admin) or delete servers you no longer need; the oldest frozen server unfreezes first."
    : "An owner or admin of the organization can raise the plan or delete servers.";
  return html`<div class="frozen-note" role="note" aria-labelledby="frozen-heading">
    <h2 id="frozen-heading">${frozen.length === 1 ? "1 server is frozen" : `${frozen.length} servers are frozen`}</h2>
    <p>
      The organization has more servers than its plan allows, so the newest beyond the limit are frozen: they stay here with their settings, but their agents are refused,
      players cannot sign in on them and their consoles do not run commands. Nothing was deleted.
    </p>
    <p>${what}</p>
  </div>`;
}

/** On a frozen server's page: why, and what to do. */
function frozenSection(s: Server, manage: boolean): Html {
  if (!s.frozen) return html``;
  return html`<section class="frozen-note" aria-labelledby="frozen-heading" data-field="frozen-reason">
    <h2 id="frozen-heading"><span class="badge frozen">Frozen</span> This server is frozen</h2>
    <p>${s.frozenReason.charAt(0).toUpperCase()}${s.frozenReason.slice(1)}.</p>
    <p>
      Its agent is refused and players cannot sign in on it; its console runs no commands.
      ${manage ? "You can still rename it, regenerate its key, manage access or delete it." : "An owner or admin of the organization can raise the plan or delete servers."}
    </p>
  </section>`;
}

function players(s: Server): Html {
  return html`<span data-field="players">${s.online ? String(s.playerCount) : "—"}</span>`;
}

/** The exact command that runs the agent for a server with this key. */
export function agentCommand(v: Viewer, game: Game, key: string): string {
  const base = `npx outpost-agent run --url ${v.deps.accountBaseUrl.origin} --key ${key}`;
  return game === Game.HYTALE ? `${base} --game ${gameFlag(game)}` : base;
}

function createForm(v: Viewer, org: Organization, values: { name?: string; game?: string } = {}, errors?: FormErrors): Html {
  return postForm(
    orgPath(org, "/servers"),
    v.formToken,
    html`${formAlert(errors, ["name", "game"])} ${textField({ name: "name", label: "Server name", value: values.name, required: true, maxlength: 64, errors })}
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
  const { servers } = await v.core.servers.listServers({ organizationSlug: org.slug });
  const manage = canManage(org.role);
  const rows = servers.map(
    (s) =>
      html`<tr data-server-id="${s.id}" data-server-name="${s.name}">
        <td><a href="${orgPath(org, `/servers/${s.id}`)}">${s.name}</a>${frozenBadge(s)}</td>
        <td>${gameName(s.game)}</td>
        <td>${statusBadge(s)}</td>
        <td>${players(s)}</td>
        <td>${trustBadge(s)}</td>
        <td data-field="last-seen">${when(s.lastSeenAt, "Never")}</td>
      </tr>`,
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
          ? html`<div class="table-wrap" data-live-status="${orgPath(org, "/servers/status")}" role="region" tabindex="0" aria-label="Servers of ${org.name}">
              <table>
                <caption class="sr-only">
                  Servers of ${org.name}
                </caption>
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Game</th>
                    <th scope="col">Status</th>
                    <th scope="col">Players</th>
                    <th scope="col">Sign-in</th>
                    <th scope="col">Last seen</th>
                  </tr>
                </thead>
                <tbody>
                  ${rows}
                </tbody>
              </table>
            </div>`
          : html`<p class="empty">
              ${manage ? "No servers yet. Create the first one below." : "No servers are shared with you yet. Ask an owner or admin of the organization for access."}
            </p>`
      }
      ${
        manage
          ? html`<h2 id="create-server-heading">Create a server</h2>
              ${createForm(v, org, values, errors)}`
          : ""
      }`,
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
      <p class="hint">
        Add <span class="mono">--auth offline</span> if the game server does not verify player accounts. Run <span class="mono">npx outpost-agent</span> without arguments
        for its options.
      </p>
      <div class="actions">
        <a class="btn primary" href="${orgPath(org, `/servers/${server.id}`)}">Go to the server</a>
        <a class="btn ghost" href="${orgPath(org, "/servers")}">All servers</a>
      </div>
    </section>`,
  });
}

/** The server's facts; the page script keeps status, players and last seen current. */
function statusSection(org: Organization, s: Server): Html {
  return html`<section class="panel" aria-labelledby="status-heading" data-live-status="${orgPath(org, "/servers/status")}">
    <h2 id="status-heading">Status</h2>
    <dl class="facts" data-server-id="${s.id}" data-server-name="${s.name}">
      <div>
        <dt>Status</dt>
        <dd>${statusBadge(s)}</dd>
      </div>
      <div>
        <dt>Players online</dt>
        <dd>${players(s)}</dd>
      </div>
      <div>
        <dt>Game</dt>
        <dd>${gameName(s.game)}</dd>
      </div>
      <div>
        <dt>Last seen</dt>
        <dd data-field="last-seen">${when(s.lastSeenAt, "Never")}</dd>
      </div>
      <div class="wide">
        <dt>Sign-in</dt>
        <dd>
          ${trustBadge(s)}
          <p class="hint" data-field="trust-detail">${playerTrust(s.playerAuth, s.signInAllowed).detail}</p>
        </dd>
      </div>
      <div>
        <dt>Agent</dt>
        <dd>${s.agentVersion ? `outpost-agent ${s.agentVersion}` : "Never connected"}</dd>
      </div>
      <div>
        <dt>Agent key</dt>
        <dd class="mono">${s.agentKeyPrefix}…</dd>
      </div>
      <div>
        <dt>Created</dt>
        <dd>${when(s.createdAt)}</dd>
      </div>
    </dl>
  </section>`;
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
      <p>
        The key starting <span class="mono">${s.agentKeyPrefix}</span> connects this server's agent. Regenerate it if it leaked: the old key stops working and its agent
        is disconnected at once.
      </p>
      ${dangerForm({ action: `${base}/regenerate-key`, token: v.formToken, label: "Regenerate agent key", confirm: `Regenerate the agent key of ${s.name}?`, consequence: "The current key stops working at once and the connected agent is disconnected." })}
    </section>
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
  const [playersPanel, grantsSection, consoleAllowed] = await Promise.all([
    playersSection(v, s),
    manage ? accessSection(v, org, s, state.grant) : html``,
    manage || memberMayUseConsole(v, org, s.id),
  ]);
  render(
    ctx,
    v,
    {
      title: s.name,
      org,
      section: "servers",
      notice: noticeOf(ctx),
      crumbs: [{ href: orgPath(org, "/servers"), label: "Servers" }],
      scripts: ["console.js"],
      body: html`${frozenSection(s, manage)}${statusSection(org, s)} ${playersPanel}
      ${s.frozen ? "" : consoleAllowed ? consolePanel(v, org, s, state.console) : noConsolePanel(org, s)} ${manage ? manageSections(v, org, s, state, grantsSection) : ""}`,
    },
    status,
  );
};

/** Whether the member's grant to the server includes the console (reading or commands). */
async function memberMayUseConsole(v: Viewer, org: Organization, serverId: string): Promise<boolean> {
  const { accessGrants } = await v.core.organizations.getCurrentMember({ organizationSlug: org.slug });
  const console = [ServerAction.CONSOLE_READ, ServerAction.CONSOLE_COMMAND];
  return accessGrants.some((g) => g.serverId === serverId && g.actions.some((a) => console.includes(a)));
}

function noConsolePanel(org: Organization, s: Server): Html {
  return html`<section class="panel stack" aria-labelledby="console-heading">
    <h2 id="console-heading">Console</h2>
    <p class="hint">Your grant to this server does not include its console. <a href="${orgPath(org, `/servers/${s.id}/request`)}">Ask for more access</a>.</p>
  </section>`;
}

const games: Record<string, Game> = { minecraft: Game.MINECRAFT, hytale: Game.HYTALE };

/**
 * Live status for the page script: JSON, polled every 2 s, so one core call (no viewer); a
 * missing or ended session is a 401, not a redirect.
 */
async function liveStatus(ctx: Context, deps: DashboardDeps): Promise<void> {
  ctx.set("Cache-Control", "no-store");
  try {
    if (!readSessionCookie(ctx.req.headers, deps.secureCookies)) throw new ConnectError("sign in again", Code.Unauthenticated);
    const { servers } = await coreFor(deps.calls, ctx).servers.listServers({ organizationSlug: ctx.params.slug });
    ctx.body = {
      servers: servers.map((s) => ({
        id: s.id,
        name: s.name,
        online: s.online,
        playerCount: s.playerCount,
        trust: playerTrust(s.playerAuth, s.signInAllowed),
        lastSeenAt: s.lastSeenAt ? timestampDate(s.lastSeenAt).toISOString() : null,
      })),
    };
  } catch (error) {
    const body = errorBody(error, ctx.state.requestId);
    if (isUnexplainedFailure(error)) ctx.state.log?.error({ err: error }, "server status failed");
    ctx.status = body.status;
    ctx.body = body;
  }
}

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
  consoleEventRoutes(router, deps);
}
