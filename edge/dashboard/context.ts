/**
 * What each dashboard request starts from: the person behind the session cookie (or a redirect
 * to sign in), their organizations, the anti-forgery token, and core acting as them. Pages are
 * GET handlers; actions are POST handlers whose form token is checked before anything else.
 */
import type { Context } from "koa";
import type { CoreCalls } from "../core-calls.ts";
import { Code } from "@connectrpc/connect";
import { httpOnlyCookieHeader, readCookie, readSessionCookie } from "../cookies.ts";
import { readLimitedText, mediaType } from "../body.ts";
import { edgeBodyMaxBytes } from "../body-limits.ts";
import { formToken, formTokenField, formTokenMatches } from "../form-token.ts";
import { dashboardContentSecurityPolicy, sendPage } from "../pages.ts";
import type { Organization } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { coreFor, hasCode, type Core } from "./core.ts";
import { layout, type PageOptions, type Shell } from "./layout.ts";
import { html } from "../html.ts";
import { canManage } from "./format.ts";
import type { EditorModules } from "./editor-modules.ts";

/** Remembers the organization last opened, so /app returns to it. */
export const lastOrgCookie = "outpost_org";

export interface DashboardDeps {
  /** The edge's one way to call core as the request's caller. */
  calls: CoreCalls;
  accountBaseUrl: URL;
  /** GAME_ISSUER_URL, for the Game OAuth client pages; absent, they say it is not configured. */
  gameIssuerUrl?: URL;
  secureCookies: boolean;
  /** Aborted when the instance shuts down: live consoles end with a reconnect hint. */
  shutdown?: AbortSignal;
  /** The file editor's modules and the CSP of its pages. */
  editor: EditorModules;
  /** The largest file the upload form takes (FILE_TRANSFER_MAX_MB). */
  fileTransferMaxBytes: number;
}

export interface Viewer extends Shell {
  core: Core;
  deps: DashboardDeps;
}

/** Raised to end a request with a page of its own (403, 404…). */
export class PageError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

/** Where to send someone without a session: sign in, then back here (GET) or to /app. */
export function signInRedirect(ctx: Context): void {
  const back = ctx.method === "GET" ? ctx.url : "/app";
  ctx.redirect(`/sign-in?return_to=${encodeURIComponent(back)}`);
}

/** The viewer of this request, or undefined after redirecting to sign in. */
export async function loadViewer(ctx: Context, deps: DashboardDeps): Promise<Viewer | undefined> {
  const token = readSessionCookie(ctx.req.headers, deps.secureCookies);
  if (!token) {
    signInRedirect(ctx);
    return undefined;
  }
  const core = coreFor(deps.calls, ctx);
  try {
    const [session, orgs, unread] = await Promise.all([core.auth.getSession({}), core.organizations.listOrganizations({}), core.notifications.getUnreadCount({})]);
    return {
      user: session.user!,
      organizations: orgs.organizations,
      unread: unread.unread,
      formToken: formToken(ctx, deps.secureCookies),
      lastOrg: readCookie(ctx.req.headers, lastOrgCookie, deps.secureCookies),
      core,
      deps,
    };
  } catch (error) {
    if (hasCode(error, Code.Unauthenticated)) {
      signInRedirect(ctx);
      return undefined;
    }
    throw error;
  }
}

/** The organization of the URL among the viewer's, or a 404 page (another's looks absent). */
export function orgOf(v: Viewer, slug: string): Organization {
  const org = v.organizations.find((o) => o.slug === slug);
  if (!org) throw new PageError(404, `There is no organization "${slug}" that you belong to.`);
  return org;
}

/** The item with this id among an organization's (from a list call), or a 404 page saying `missing`. */
export function oneOf<T extends { id: string }>(items: readonly T[], id: string, missing: string): T {
  const found = items.find((item) => item.id === id);
  if (!found) throw new PageError(404, missing);
  return found;
}

/**
 * The organization of the URL when the viewer is one of its owners or admins; else a 403 page
 * saying what only they do (`what`, e.g. "manage its alerts").
 */
export function managedOrgOf(v: Viewer, slug: string, what: string): Organization {
  const org = orgOf(v, slug);
  if (!canManage(org.role)) throw new PageError(403, `Only owners and admins of the organization ${what}.`);
  return org;
}

export function render(ctx: Context, v: Viewer | undefined, options: PageOptions, status = 200): void {
  sendPage(ctx, status, layout(v, options), options.policy ?? dashboardContentSecurityPolicy);
}

export type PageHandler = (ctx: Context, v: Viewer) => Promise<void> | void;
export type ActionHandler = (ctx: Context, v: Viewer, form: URLSearchParams) => Promise<void> | void;

/** A GET page for a signed-in person. */
export function page(deps: DashboardDeps, handler: PageHandler) {
  return async (ctx: Context) => {
    const v = await loadViewer(ctx, deps);
    if (!v) return;
    ctx.state.dashboardViewer = v;
    // An organization's page makes it the one /app and the switcher return to.
    const slug = (ctx.params as Record<string, string> | undefined)?.slug;
    if (slug && slug !== v.lastOrg && v.organizations.some((o) => o.slug === slug)) {
      ctx.append("Set-Cookie", httpOnlyCookieHeader(lastOrgCookie, slug, 60 * 60 * 24 * 365, deps.secureCookies));
    }
    await handler(ctx, v);
  };
}

/** A form body as URLSearchParams (repeated fields kept), at most 64 KiB (more for a note: edgeBodyMaxBytes). */
async function readForm(ctx: Context): Promise<URLSearchParams> {
  if (mediaType(ctx) !== "application/x-www-form-urlencoded") throw new PageError(415, "This form must be sent as a form.");
  const text = await readLimitedText(ctx, edgeBodyMaxBytes(ctx.path), () => new PageError(413, "The form is too large."));
  return new URLSearchParams(text);
}

/** A POST action: form token first (403 when it does not match), then the viewer. */
export function action(deps: DashboardDeps, handler: ActionHandler) {
  return async (ctx: Context) => {
    const form = await readForm(ctx);
    if (!formTokenMatches(ctx, { [formTokenField]: form.get(formTokenField) ?? undefined }, deps.secureCookies)) {
      throw new PageError(403, "This form has expired or did not come from Outpost. Go back, reload the page and try again.");
    }
    const v = await loadViewer(ctx, deps);
    if (v) {
      ctx.state.dashboardViewer = v;
      await handler(ctx, v, form);
    }
  };
}

/** Redirect-after-post to `path` with a fixed notice. */
export function done(ctx: Context, path: string, notice?: string): void {
  ctx.status = 303;
  ctx.redirect(notice ? `${path}${path.includes("?") ? "&" : "?"}notice=${notice}` : path);
}

export function noticeOf(ctx: Context): string | undefined {
  return typeof ctx.query.notice === "string" ? ctx.query.notice : undefined;
}

/**
 * The confirmation step of a destructive action when the browser ran no script (or the form was
 * posted without it): the question again, with a button that posts `confirmed=yes`.
 */
export function confirmed(
  ctx: Context,
  v: Viewer,
  form: URLSearchParams,
  o: { title: string; consequence: string; label: string; cancel: string; org?: Organization },
): boolean {
  if (form.get("confirmed") === "yes") return true;
  const fields = [...form.entries()].filter(([k]) => k !== formTokenField && k !== "confirmed");
  render(ctx, v, {
    title: o.title,
    org: o.org,
    body: html`<div class="panel confirm">
<p>${o.consequence}</p>
<form method="post" action="${ctx.path}">
<input type="hidden" name="${formTokenField}" value="${v.formToken}">
<input type="hidden" name="confirmed" value="yes">
${fields.map(([k, val]) => html`<input type="hidden" name="${k}" value="${val}">`)}
<div class="actions"><button type="submit" class="btn danger">${o.label}</button> <a class="btn ghost" href="${o.cancel}">Cancel</a></div>
</form>
</div>`,
  });
  return false;
}
