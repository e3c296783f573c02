/**
 * Start, stop, restart and kill on a server's page (servers/startServer …), for a server whose
 * agent runs its process (`outpost-agent wrap`) and a viewer who may (owners and admins, members
 * whose grant has "Start and stop"). Plain forms: stop, restart and kill ask first (the page
 * script's dialog, or a confirmation page without script); the answer comes back as a notice, a
 * refusal as a message in the panel. The game's state on the page follows by the live status poll.
 */
import type { Router } from "@koa/router";
import { Code, ConnectError } from "@connectrpc/connect";
import type { Organization } from "../../gen/outpost/organizations/v1/resources_pb.js";
import type { Server } from "../../gen/outpost/servers/v1/resources_pb.js";
import { httpStatus, retryHeaders } from "../errors.ts";
import { action, confirmed, done, orgOf, type ActionHandler, type DashboardDeps, type Viewer } from "./context.ts";
import { dangerForm, postForm } from "./forms.ts";
import { html, type Html } from "../html.ts";
import { orgPath } from "./paths.ts";
import type { ServerPage } from "./server-page.ts";

type Action = "start" | "stop" | "restart" | "kill";

/** Each action's button, question and consequence. */
const actions: Record<Action, { label: string; confirm?: string; consequence?: string }> = {
  start: { label: "Start" },
  restart: {
    label: "Restart",
    confirm: "Restart the server?",
    consequence: "It saves and stops (players are disconnected), then starts again.",
  },
  stop: {
    label: "Stop",
    confirm: "Stop the server?",
    consequence: "It saves and stops; players are disconnected. It stays stopped until someone starts it; the agent stays connected.",
  },
  kill: {
    label: "Kill",
    confirm: "Kill the server now?",
    consequence: "Its process ends at once, without saving: what the world had not saved is lost. Use it when Stop does not work.",
  },
};

/** The notices the answers redirect with (layout.ts words them). */
const noticeOf: Record<Action, string> = { start: "server-starting", stop: "server-stopping", restart: "server-restarting", kill: "server-killed" };

/** The panel, with what a refused request said when the page comes back with it. */
export function lifecyclePanel(v: Viewer, org: Organization, s: Server, problem?: string): Html {
  if (!s.lifecycleAvailable && !problem) return html``;
  const base = orgPath(org, `/servers/${s.id}/lifecycle`);
  const button = (name: Action) => {
    const a = actions[name];
    if (!a.confirm) return postForm(`${base}/${name}`, v.formToken, html`<button type="submit" class="btn primary">${a.label}</button>`, html` class="inline"`);
    return dangerForm({
      action: `${base}/${name}`,
      token: v.formToken,
      label: a.label,
      confirm: a.confirm,
      consequence: a.consequence!,
      buttonClass: name === "kill" ? "danger" : "",
    });
  };
  return html`<section class="panel stack" aria-labelledby="lifecycle-heading">
<h2 id="lifecycle-heading">Start and stop</h2>
<p class="hint">The agent writes <span class="mono">stop</span> to the console and kills the server if it has not stopped within its grace period. A server stopped here keeps its agent connected, so you can start it again.</p>
${problem ? html`<p class="alert" role="alert">${problem}</p>` : ""}
<div class="actions">${(["start", "restart", "stop", "kill"] as const).map(button)}</div>
</section>`;
}

/** Why a request was refused, in words for the page; undefined for errors the dashboard answers itself. */
function problemOf(error: unknown): string | undefined {
  if (!(error instanceof ConnectError)) return undefined;
  switch (error.code) {
    case Code.FailedPrecondition:
      return `The server's agent cannot do that now: ${error.rawMessage}.`;
    case Code.DeadlineExceeded:
      return "No answer came from the server's agent (too slow, or it went away). It may have acted: the server's state above tells.";
    case Code.PermissionDenied:
      return "You may not start or stop this server. Ask an owner or admin of the organization for access.";
    case Code.ResourceExhausted:
      return `Not now: ${error.rawMessage}.`;
    default:
      return undefined;
  }
}

function lifecycleAction(name: Action, showServer: ServerPage): ActionHandler {
  return async (ctx, v, form) => {
    const org = orgOf(v, ctx.params.slug);
    const back = orgPath(org, `/servers/${ctx.params.id}`);
    const a = actions[name];
    if (a.confirm && !confirmed(ctx, v, form, { title: a.confirm, consequence: a.consequence!, label: a.label, cancel: back, org })) return;
    const request = { serverId: ctx.params.id };
    const servers = v.core.servers;
    try {
      const answer = await { start: servers.startServer, stop: servers.stopServer, restart: servers.restartServer, kill: servers.killServer }[name](request);
      done(ctx, back, answer.changed ? noticeOf[name] : "server-unchanged");
    } catch (error) {
      const problem = problemOf(error);
      if (!problem) throw error;
      for (const [header, value] of Object.entries(retryHeaders(error as ConnectError) ?? {})) ctx.set(header, value);
      await showServer(ctx, v, { lifecycle: problem }, httpStatus((error as ConnectError).code));
    }
  };
}

export function lifecycleRoutes(router: Router, deps: DashboardDeps, showServer: ServerPage): void {
  for (const name of Object.keys(actions) as Action[]) {
    router.post(`/app/o/:slug/servers/:id/lifecycle/${name}`, action(deps, lifecycleAction(name, showServer)));
  }
}
