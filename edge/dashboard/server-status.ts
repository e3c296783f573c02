/**
 * A server's state as the pages show it (online, players, sign-in trust, frozen) and the JSON the
 * page script polls every 2 s to keep those fields (`data-field`) current.
 */
import type { Context } from "koa";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { readSessionCookie } from "../cookies.ts";
import { errorBody, isUnexplainedFailure } from "../errors.ts";
import { GameState, type Server } from "../../gen/outpost/servers/v1/resources_pb.js";
import type { Organization } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { playerTrust } from "../player-trust.ts";
import type { DashboardDeps } from "./context.ts";
import { coreFor } from "./core.ts";
import { gameName, when } from "./format.ts";
import { html, type Html } from "../html.ts";
import { orgPath } from "./paths.ts";

/** Whether the server can sign players in, as a badge (the words are edge/player-trust.ts's). */
export function trustBadge(s: Server): Html {
  const trust = playerTrust(s.playerAuth, s.signInAllowed);
  return html`<span class="trust ${trust.tone}" data-field="trust">${trust.label}</span>`;
}

/** Online or offline, as a badge. */
export function statusBadge(s: Server): Html {
  return html`<span class="status ${s.online ? "online" : "offline"}" data-field="status">${s.online ? "Online" : "Offline"}</span>`;
}

/** A frozen server's badge: its organization has more servers than its plan allows (core/servers/frozen.ts). */
export function frozenBadge(s: Server): Html {
  return s.frozen ? html` <span class="badge frozen" data-field="frozen">Frozen</span>` : html``;
}

/** What freezing means and what to do, above the list when any server of it is frozen. */
export function frozenNote(servers: Server[], manage: boolean): Html {
  const frozen = servers.filter((s) => s.frozen);
  if (!frozen.length) return html``;
  const what = manage
    ? "Raise the plan (ask a platform admin) or delete servers you no longer need; the oldest frozen server unfreezes first."
    : "An owner or admin of the organization can raise the plan or delete servers.";
  return html`<div class="frozen-note" role="note" aria-labelledby="frozen-heading"><h2 id="frozen-heading">${frozen.length === 1 ? "1 server is frozen" : `${frozen.length} servers are frozen`}</h2>
<p>The organization has more servers than its plan allows, so the newest beyond the limit are frozen: they stay here with their settings, but their agents are refused, players cannot sign in on them and their consoles do not run commands. Nothing was deleted.</p>
<p>${what}</p></div>`;
}

/** On a frozen server's page: why, and what to do. */
export function frozenSection(s: Server, manage: boolean): Html {
  if (!s.frozen) return html``;
  return html`<section class="frozen-note" aria-labelledby="frozen-heading" data-field="frozen-reason"><h2 id="frozen-heading"><span class="badge frozen">Frozen</span> This server is frozen</h2>
<p>${s.frozenReason.charAt(0).toUpperCase()}${s.frozenReason.slice(1)}.</p>
<p>Its agent is refused and players cannot sign in on it; its console runs no commands. ${manage ? "You can still rename it, regenerate its key, manage access or delete it." : "An owner or admin of the organization can raise the plan or delete servers."}</p></section>`;
}

/** How many players are online, or a dash while the server is offline. */
export function players(s: Server): Html {
  return html`<span data-field="players">${s.online ? String(s.playerCount) : "—"}</span>`;
}

/** The game's state in words and as a badge's tone, with how it came to it; undefined when its agent reports none. */
export function gameStateWords(s: Server): { label: string; tone: "online" | "offline"; detail: string } | undefined {
  const label = {
    [GameState.STARTING]: "Starting",
    [GameState.RUNNING]: "Running",
    [GameState.STOPPING]: "Stopping",
    [GameState.STOPPED]: "Stopped",
    [GameState.CRASHED]: "Crashed",
  }[s.gameState as Exclude<GameState, GameState.UNSPECIFIED>];
  return label ? { label, tone: s.gameState === GameState.RUNNING ? "online" : "offline", detail: s.gameStateDetail } : undefined;
}

/**
 * What the agent that runs the server's process says of it (wrap), with how it came to that;
 * nothing for one that does not. The page script keeps it current.
 */
function gameStateFact(s: Server): Html {
  const words = gameStateWords(s);
  if (!words && !s.lifecycleAvailable) return html``;
  return html`<div class="wide"><dt>Server process</dt><dd><span class="status ${words?.tone ?? "offline"}" data-field="game-state">${words?.label ?? "Unknown"}</span> <span class="hint" data-field="game-state-detail">${words?.detail ?? ""}</span></dd></div>`;
}

/** The server's facts; the page script keeps status, players and last seen current. */
export function statusSection(org: Organization, s: Server): Html {
  return html`<section class="panel" aria-labelledby="status-heading" data-live-status="${orgPath(org, "/servers/status")}">
<h2 id="status-heading">Status</h2>
<dl class="facts" data-server-id="${s.id}" data-server-name="${s.name}">
<div><dt>Status</dt><dd>${statusBadge(s)}</dd></div>
<div><dt>Players online</dt><dd>${players(s)}</dd></div>
<div><dt>Game</dt><dd>${gameName(s.game)}</dd></div>
${gameStateFact(s)}
<div><dt>Last seen</dt><dd data-field="last-seen">${when(s.lastSeenAt, "Never")}</dd></div>
<div class="wide"><dt>Sign-in</dt><dd>${trustBadge(s)}<p class="hint" data-field="trust-detail">${playerTrust(s.playerAuth, s.signInAllowed).detail}</p></dd></div>
<div><dt>Agent</dt><dd>${s.agentVersion ? `outpost-agent ${s.agentVersion}` : "Never connected"}</dd></div>
<div><dt>Agent key</dt><dd class="mono">${s.agentKeyPrefix}…</dd></div>
<div><dt>Created</dt><dd>${when(s.createdAt)}</dd></div>
</dl>
</section>`;
}

/**
 * Live status for the page script: JSON, polled every 2 s, so one core call (no viewer); a
 * missing or ended session is a 401, not a redirect.
 */
export async function liveStatus(ctx: Context, deps: DashboardDeps): Promise<void> {
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
        gameState: gameStateWords(s) ?? null,
      })),
    };
  } catch (error) {
    const body = errorBody(error, ctx.state.requestId);
    if (isUnexplainedFailure(error)) ctx.state.log?.error({ err: error }, "server status failed");
    ctx.status = body.status;
    ctx.body = body;
  }
}
