/**
 * The console on a server's page: the live output (console.js reads console-events.ts's stream),
 * a command line that runs `servers/executeConsoleCommand`, and the players online. Core decides
 * who may use it (owners and admins, members granted the server); the page shows its refusals as
 * messages. The command line is a plain form: without script the page comes back with the
 * command's output; with it, console.js posts the same form with fetch and adds the answer here.
 */
import type { Router } from "@koa/router";
import type { Context } from "koa";
import { Code, ConnectError } from "@connectrpc/connect";
import type { Organization } from "../../gen/outpost/organizations/v1/resources_pb.js";
import type { OnlinePlayer, Server } from "../../gen/outpost/servers/v1/resources_pb.js";
import type { ExecuteConsoleCommandResponse } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { codeName, httpStatus, rateLimitHeaders, retryHeaders } from "../errors.ts";
import { action, orgOf, type DashboardDeps, type Viewer } from "./context.ts";
import { when } from "./format.ts";
import { postForm } from "./forms.ts";
import { html, type Html } from "../html.ts";
import { orgPath } from "./paths.ts";
import type { ConsoleOutcome, ServerPage } from "./server-page.ts";

/** Why a console call failed, in words for the page; undefined for errors the page itself answers. */
function problemOf(error: unknown): ConsoleOutcome["problem"] {
  if (!(error instanceof ConnectError)) return undefined;
  const status = httpStatus(error.code);
  const problem = (message: string) => ({ status, code: codeName(error.code), message, headers: retryHeaders(error) });
  switch (error.code) {
    case Code.InvalidArgument:
      return problem(`This is not a command Outpost can send: one line of 1 to 1,000 characters (${error.rawMessage}).`);
    case Code.FailedPrecondition:
      return problem(`The server cannot run commands now: ${error.rawMessage}.`);
    case Code.DeadlineExceeded:
      return problem("No answer came from the server (too slow, or its agent went away). The command may have run: watch the live output.");
    case Code.PermissionDenied:
      return problem("You may not use this server's console. Ask an owner or admin of the organization for access.");
    case Code.NotFound:
      return problem("This server does not exist any more, or you no longer have access to it.");
    case Code.ResourceExhausted: {
      const wait = rateLimitHeaders(error)?.["Retry-After"];
      return problem(wait ? `Too many commands: try again in ${wait} seconds.` : `Not now: ${error.rawMessage}.`);
    }
    default:
      return undefined;
  }
}

/** What the agent's side says while the page loads (console.js keeps it current). */
function consoleState(s: Server): string {
  if (!s.online) return "The server is offline: commands are refused until its agent connects.";
  if (!s.consoleAvailable) return "This server's agent cannot reach the game's console: run it with a console (outpost-agent wrap, or the flying-squid plugin).";
  return "Commands run on the game server's console as an operator's would.";
}

/** The outcome in a word: a command that got no answer in time may still have run, so it is not "Refused". */
function badgeOf(o: ConsoleOutcome): Html {
  if (o.result) return o.result.success ? html`<span class="status online">Ran</span>` : html`<span class="status offline">Not run</span>`;
  if (o.problem?.status === 504) return html`<span class="status offline">No answer</span>`;
  return html`<span class="status offline">Refused</span>`;
}

function resultEntry(o: ConsoleOutcome): Html {
  const ran = o.result?.success;
  let body: Html;
  if (o.problem) body = html`<p class="alert" role="alert">${o.problem.message}</p>`;
  else if (!ran) body = html`<p class="alert" role="alert">${o.result?.error || "The agent did not run the command."}</p>`;
  else if (o.result?.output.length) body = html`<pre class="console-output">${o.result.output.join("\n")}</pre>`;
  else body = html`<p class="muted">No output.</p>`;
  return html`<div class="console-result"><p class="console-command"><span class="mono">› ${o.command}</span> ${badgeOf(o)}</p>${body}</div>`;
}

/** The console panel of server `s`, with the outcome of the command just posted (no script). */
export function consolePanel(v: Viewer, org: Organization, s: Server, outcome?: ConsoleOutcome): Html {
  const base = orgPath(org, `/servers/${s.id}`);
  const invalid = outcome?.problem?.status === 400;
  const describedBy = invalid ? "console-command-hint console-command-error" : "console-command-hint";
  return html`<section class="panel stack console" aria-labelledby="console-heading" data-console-events="${base}/console/events" data-console-players="${base}/players" data-console="${s.consoleAvailable ? "yes" : "no"}">
<h2 id="console-heading">Console</h2>
<p class="hint" id="console-state">${consoleState(s)}</p>
<h3 id="console-live-heading">Live output</h3>
<div id="console-live" class="console-log" role="log" aria-live="off" aria-labelledby="console-live-heading" tabindex="0"><p class="console-note">The live output needs the page's script; the output of each command you run shows below.</p></div>
${postForm(
  `${base}/console`,
  v.formToken,
  html`<div class="field${invalid ? " invalid" : ""}">
<label for="console-command">Command</label>
<div class="command-row"><input id="console-command" name="command" type="text" class="mono" required maxlength="1000" autocomplete="off" autocapitalize="off" spellcheck="false" value="${invalid ? outcome?.command : ""}" aria-describedby="${describedBy}"${invalid ? html` aria-invalid="true"` : ""}><button type="submit" class="btn primary">Run</button></div>
<p class="hint" id="console-command-hint">As typed on the server's console, such as <span class="mono">list</span> or <span class="mono">say Hello</span>; a leading <span class="mono">/</span> is dropped.</p>
${invalid ? html`<p class="field-error" id="console-command-error">${outcome?.problem?.message}</p>` : ""}
</div>`,
  html` class="console-form" data-console-form`,
)}
<h3 id="console-results-heading">Command output</h3>
<div id="console-results" class="console-results" aria-labelledby="console-results-heading" role="log" tabindex="0">${outcome && !invalid ? resultEntry(outcome) : html`<p class="muted" data-console-empty>Commands you run here show their output here.</p>`}</div>
</section>`;
}

/** The players online on `s`, as its agent reports them; the page leaves them out when core refuses. */
export async function playersSection(v: Viewer, s: Server): Promise<Html> {
  let players: OnlinePlayer[];
  try {
    ({ players } = await v.core.servers.listPlayers({ serverId: s.id }));
  } catch (error) {
    if (!problemOf(error)) throw error;
    return html``;
  }
  const rows = players.map((p) => html`<tr><td>${p.name}</td><td class="mono">${p.uuid}</td><td>${when(p.since)}</td></tr>`);
  return html`<section class="panel stack" aria-labelledby="players-heading">
<h2 id="players-heading">Players online</h2>
<div data-players-list data-label="Players online on ${s.name}">${
    players.length
      ? html`<div class="table-wrap" role="region" tabindex="0" aria-label="Players online on ${s.name}"><table><caption class="sr-only">Players online on ${s.name}</caption><thead><tr><th scope="col">Name</th><th scope="col">UUID</th><th scope="col">Online since</th></tr></thead><tbody>${rows}</tbody></table></div>`
      : html`<p class="empty">${s.online ? "No one is online." : "The server is offline."}</p>`
  }</div>
</section>`;
}

/** Runs `command` on server `serverId` as the viewer; a refusal the page can explain is an outcome. */
async function runCommand(v: Viewer, serverId: string, command: string): Promise<ConsoleOutcome> {
  try {
    const res: ExecuteConsoleCommandResponse = await v.core.servers.executeConsoleCommand({ serverId, command });
    return { command, result: { requestId: res.requestId, success: res.success, output: res.output, error: res.error } };
  } catch (error) {
    const problem = problemOf(error);
    if (!problem) throw error;
    return { command, problem };
  }
}

function wantsJson(ctx: Context): boolean {
  return ctx.accepts("html", "json") === "json";
}

/**
 * Running a command: the form posted by the browser gets the server's page with the output; the
 * same form posted by console.js (Accept: application/json) gets the outcome as JSON.
 */
export function consoleRoutes(router: Router, deps: DashboardDeps, showServer: ServerPage): void {
  router.post(
    "/app/o/:slug/servers/:id/console",
    action(deps, async (ctx, v, form) => {
      orgOf(v, ctx.params.slug);
      const outcome = await runCommand(v, ctx.params.id, form.get("command") ?? "");
      for (const [name, value] of Object.entries(outcome.problem?.headers ?? {})) ctx.set(name, value);
      if (outcome.problem?.status === 404 && !wantsJson(ctx)) throw new ConnectError(outcome.problem.message, Code.NotFound);
      if (!wantsJson(ctx)) return showServer(ctx, v, { console: outcome }, outcome.problem?.status ?? 200);
      ctx.set("Cache-Control", "no-store");
      ctx.status = outcome.problem?.status ?? 200;
      const { status, code, message } = outcome.problem ?? {};
      ctx.body = outcome.problem ? { status, code, message, command: outcome.command } : { command: outcome.command, ...outcome.result };
    }),
  );
}
