/**
 * A server's page, as the parts drawn on it know it: servers.ts draws the page, and the console
 * (console.ts) and access grants (server-access.ts) answer their forms by drawing it again with
 * what happened. The types live here so that those parts need not import servers.ts, which
 * imports them.
 */
import type { Context } from "koa";
import type { Viewer } from "./context.ts";
import type { FormErrors } from "./core.ts";
import type { TermsForm } from "./grant-views.ts";

/** What running one command from the page gave: the agent's answer, or why there is none. */
export interface ConsoleOutcome {
  command: string;
  result?: { requestId: string; success: boolean; output: string[]; error: string };
  problem?: { status: number; code: string; message: string; headers?: Record<string, string> };
}

/** What a server's page shows besides the server: a refused form, or the command just run. */
export interface ServerPageState {
  rename?: { errors: FormErrors; value: string };
  grant?: TermsForm;
  console?: ConsoleOutcome;
  /** Why a start, stop, restart or kill was refused (lifecycle.ts). */
  lifecycle?: string;
}

/** Draws the server's page (of the server in `ctx.params`) with `state`, answering with `status`. */
export type ServerPage = (ctx: Context, v: Viewer, state?: ServerPageState, status?: number) => Promise<void>;
