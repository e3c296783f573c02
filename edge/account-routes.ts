/**
 * Dashboard sign-up, sign-in and sign-out: the pages (GET) and their forms (POST), and the same
 * POSTs in JSON for scripts. The session token never reaches page scripts: it goes straight from
 * core into an HttpOnly cookie.
 *
 * A form POST must carry the browser's form token (edge/form-token.ts); on success it goes on to
 * `return_to` when that is a path on this site (never elsewhere: no open redirect), else to the
 * dashboard. A refused form comes back with the message next to what was wrong and the values
 * kept (never the password). Sign-in says the same thing whether or not the email has an account.
 */
import { Router } from "@koa/router";
import type { Transport } from "@connectrpc/connect";
import type { Context } from "koa";
import { IdentityService, type SignInResponse, type SignUpResponse } from "../gen/outpost/identity/v1/identity_service_pb.js";
import { AuthService } from "../gen/outpost/auth/v1/auth_service_pb.js";
import { knownDeviceCookie } from "../contract/credentials.ts";
import { mediaType, readFields, stringField } from "./body.ts";
import { clearSessionCookieHeader, httpOnlyCookieHeader, readCookie, readSessionCookie, sessionCookieHeader } from "./cookies.ts";
import { createCoreCalls, type CoreCalls } from "./core-calls.ts";
import { errorBody, retryHeaders, violationDetails, type ErrorBody } from "./errors.ts";
import { formToken, formTokenMatches } from "./form-token.ts";
import { redirectingFormPolicy, sendPage } from "./pages.ts";
import { accountErrorPage, signInPage, signOutPage, signUpPage, verifyEmailPage, verifyEmailResultPage } from "./account-pages/pages.ts";
import type { User } from "../gen/outpost/auth/v1/resources_pb.js";

export interface AccountRoutesOptions {
  transport: Transport;
  /** Cookies get `Secure` when the dashboard is served over https. */
  secureCookies: boolean;
}

/** Where a signed-in browser goes when it was not sent from somewhere. */
export const dashboardHome = "/app";

function publicUser(user: User | undefined) {
  return user && { id: user.id, email: user.email, name: user.name, platformAdmin: user.platformAdmin };
}

/**
 * `value` as a path on this site, or "" — never another origin, a scheme-relative `//host`, a
 * backslash trick or a control character.
 */
export function safeReturnPath(value: unknown): string {
  if (typeof value !== "string" || value.length > 2048 || !value.startsWith("/") || value.startsWith("//")) return "";
  if (/[\\\x00-\x1f\x7f]/.test(value)) return "";
  const base = new URL("http://outpost.invalid");
  const url = new URL(value, base);
  // Dot segments can turn a path into a scheme-relative one ("/.//evil.example" → "//evil.example").
  const path = url.pathname + url.search;
  return url.origin === base.origin && !path.startsWith("//") ? path : "";
}

/** The messages of a sign-in's return path that says why the app asks again (prompt=login, max_age). */
const signInNotices: Record<string, string> = {
  login: "The app asks you to sign in again before it continues.",
  max_age: "Your last sign-in is too long ago for this app. Sign in again to continue.",
};

interface Deps {
  calls: CoreCalls;
  secureCookies: boolean;
}

/** The browser as a new session records it. */
const clientOf = (ctx: Context) => ({ ip: ctx.ip.slice(0, 64), userAgent: (ctx.get("user-agent") || "").slice(0, 512) });
const deviceToken = (ctx: Context, { secureCookies }: Deps) => (readCookie(ctx.req.headers, knownDeviceCookie, secureCookies) ?? "").slice(0, 256);
const isForm = (ctx: Context) => mediaType(ctx) === "application/x-www-form-urlencoded";

/**
 * Sets the session cookie, and the known-device cookie that marks this browser as the account's.
 * Their Max-Age is what core counted by the database's clock, not this process's clock against the
 * expiry: an edge whose clock differs would otherwise make the cookie outlive the session, or die first.
 */
function startSession(ctx: Context, { secureCookies }: Deps, res: SignInResponse | SignUpResponse): void {
  ctx.append("Set-Cookie", sessionCookieHeader(res.sessionToken, res.sessionMaxAgeSeconds, secureCookies));
  if (res.deviceToken) ctx.append("Set-Cookie", httpOnlyCookieHeader(knownDeviceCookie, res.deviceToken, res.deviceTokenMaxAgeSeconds, secureCookies));
  ctx.set("Cache-Control", "no-store");
}

/** After a form's success: on to its return path on this site, else the dashboard. */
function continueTo(ctx: Context, returnTo: string): void {
  ctx.status = 303;
  ctx.redirect(returnTo || dashboardHome);
}

/** Reads a form POST, or answers 403 with a page when its form token is not this browser's. */
async function readForm(ctx: Context, { secureCookies }: Deps): Promise<Record<string, unknown> | undefined> {
  const fields = await readFields(ctx);
  if (formTokenMatches(ctx, fields, secureCookies)) return fields;
  sendPage(
    ctx,
    403,
    accountErrorPage("This form has expired", "forbidden", "the form was not sent from this site's page, or it is too old; go back, reload the page and try again"),
  );
  return undefined;
}

/** The answer to show for a refused core call (its Retry-After set on the response); a 5xx is thrown on. */
function refusal(ctx: Context, error: unknown): ErrorBody {
  const body = errorBody(error, ctx.state.requestId);
  for (const [name, value] of Object.entries(retryHeaders(error) ?? {})) ctx.set(name, value);
  if (body.status >= 500) throw error;
  return body;
}

function showSignIn(ctx: Context, deps: Deps): void {
  const returnTo = safeReturnPath(ctx.query.return_to);
  const reason = typeof ctx.query.reason === "string" ? ctx.query.reason : "";
  sendPage(ctx, 200, signInPage({ formToken: formToken(ctx, deps.secureCookies), returnTo, notice: signInNotices[reason] }), redirectingFormPolicy);
}

function showSignUp(ctx: Context, deps: Deps): void {
  sendPage(ctx, 200, signUpPage({ formToken: formToken(ctx, deps.secureCookies), returnTo: safeReturnPath(ctx.query.return_to) }), redirectingFormPolicy);
}

/** The sign-out page names who is signed in, when the cookie's session still works. */
async function showSignOut(ctx: Context, deps: Deps): Promise<void> {
  const signedIn = readSessionCookie(ctx.req.headers, deps.secureCookies) !== undefined;
  const email = signedIn
    ? await deps.calls
        .client(ctx, AuthService)
        .getSession({})
        .then(
          (s) => s.user?.email,
          () => undefined,
        )
    : undefined;
  sendPage(ctx, 200, signOutPage(formToken(ctx, deps.secureCookies), email));
}

/** POST /sign-up as JSON, for scripts: 201 with the user, or the API's error. */
async function signUpJson(ctx: Context, deps: Deps): Promise<void> {
  const fields = await readFields(ctx);
  const res = await deps.calls
    .client(ctx, IdentityService)
    .signUp({ email: stringField(fields, "email"), password: stringField(fields, "password"), name: stringField(fields, "name"), client: clientOf(ctx) });
  startSession(ctx, deps, res);
  ctx.status = 201;
  ctx.body = { user: publicUser(res.user) };
}

/** A refused sign-up form: each message next to its field, or the whole message above the form. */
function signUpRefused(ctx: Context, error: unknown): { error: string; fieldErrors: Partial<Record<"name" | "email" | "password", string>>; status: number } {
  const { status, message, reason } = refusal(ctx, error);
  const fieldErrors: Partial<Record<"name" | "email" | "password", string>> = {};
  for (const v of violationDetails(error) ?? []) {
    if (v.field === "name" || v.field === "email" || v.field === "password") fieldErrors[v.field] ??= v.message;
  }
  if (reason === "email_taken") fieldErrors.email = message;
  return { status, error: Object.keys(fieldErrors).length ? "Check the fields marked below." : message, fieldErrors };
}

async function signUpForm(ctx: Context, deps: Deps): Promise<void> {
  const fields = await readForm(ctx, deps);
  if (!fields) return;
  const values = { name: stringField(fields, "name").trim(), email: stringField(fields, "email").trim() };
  const returnTo = safeReturnPath(fields.return_to);
  try {
    startSession(ctx, deps, await deps.calls.client(ctx, IdentityService).signUp({ ...values, password: stringField(fields, "password"), client: clientOf(ctx) }));
    continueTo(ctx, returnTo);
  } catch (error) {
    const { status, ...shown } = signUpRefused(ctx, error);
    sendPage(ctx, status, signUpPage({ formToken: formToken(ctx, deps.secureCookies), returnTo, ...values, ...shown }), redirectingFormPolicy);
  }
}

/** POST /sign-in as JSON, for scripts: the user, or the API's error. */
async function signInJson(ctx: Context, deps: Deps): Promise<void> {
  const fields = await readFields(ctx);
  const res = await deps.calls
    .client(ctx, IdentityService)
    .signIn({ email: stringField(fields, "email"), password: stringField(fields, "password"), client: clientOf(ctx), deviceToken: deviceToken(ctx, deps) });
  startSession(ctx, deps, res);
  ctx.body = { user: publicUser(res.user) };
}

/**
 * What a refused sign-in form says. Validation details (a malformed email) say nothing about
 * accounts; anything else is core's one answer for every failure, or the rate limit's, or the
 * password checks' cap.
 */
function signInRefusalText(ctx: Context, { status, reason }: ErrorBody): string {
  if (reason === "server_busy") return "Too many sign-ins are being checked right now. Wait a second and try again.";
  if (status === 429) return `Too many sign-in attempts. Wait ${ctx.response.get("Retry-After") || "a minute"} seconds and try again.`;
  return status === 400 ? "Enter your email address and password." : "Wrong email or password.";
}

async function signInForm(ctx: Context, deps: Deps): Promise<void> {
  const fields = await readForm(ctx, deps);
  if (!fields) return;
  const email = stringField(fields, "email").trim();
  const returnTo = safeReturnPath(fields.return_to);
  try {
    startSession(
      ctx,
      deps,
      await deps.calls
        .client(ctx, IdentityService)
        .signIn({ email, password: stringField(fields, "password"), client: clientOf(ctx), deviceToken: deviceToken(ctx, deps) }),
    );
    continueTo(ctx, returnTo);
  } catch (error) {
    const refused = refusal(ctx, error);
    sendPage(
      ctx,
      refused.status,
      signInPage({ formToken: formToken(ctx, deps.secureCookies), returnTo, email, error: signInRefusalText(ctx, refused) }),
      redirectingFormPolicy,
    );
  }
}

/** GET /verify-email?token=…: the button that uses the link (the token is not checked yet). */
function showVerifyEmail(ctx: Context, deps: Deps): void {
  const token = typeof ctx.query.token === "string" ? ctx.query.token.slice(0, 64) : "";
  sendPage(ctx, 200, verifyEmailPage(formToken(ctx, deps.secureCookies), token));
}

/** POST /verify-email: core uses the link once; the page says what came of it (404, 400 with why). */
async function verifyEmail(ctx: Context, deps: Deps): Promise<void> {
  const fields = await readForm(ctx, deps);
  if (!fields) return;
  try {
    const { email } = await deps.calls.client(ctx, IdentityService).verifyEmail({ token: stringField(fields, "token").slice(0, 64) });
    sendPage(ctx, 200, verifyEmailResultPage({ email }));
  } catch (error) {
    const refused = refusal(ctx, error);
    sendPage(ctx, refused.status, verifyEmailResultPage({ problem: refused.message }));
  }
}

/** Ends the cookie's session (core takes it from the session header) and clears the cookie. */
async function signOut(ctx: Context, deps: Deps): Promise<void> {
  const form = isForm(ctx);
  if (form && !(await readForm(ctx, deps))) return;
  if (readSessionCookie(ctx.req.headers, deps.secureCookies)) await deps.calls.client(ctx, IdentityService).signOut({});
  ctx.append("Set-Cookie", clearSessionCookieHeader(deps.secureCookies));
  if (!form) return void (ctx.status = 204);
  ctx.status = 303;
  ctx.redirect("/sign-in");
}

export function createAccountRoutes({ transport, secureCookies }: AccountRoutesOptions): Router {
  const deps: Deps = { calls: createCoreCalls({ transport, secureCookies }), secureCookies };
  const step = (handler: (ctx: Context, deps: Deps) => Promise<void> | void) => (ctx: Context) => handler(ctx, deps);
  const router = new Router();
  router.get("/sign-in", step(showSignIn));
  router.get("/sign-up", step(showSignUp));
  router.get("/sign-out", step(showSignOut));
  router.post(
    "/sign-up",
    step((ctx) => (isForm(ctx) ? signUpForm(ctx, deps) : signUpJson(ctx, deps))),
  );
  router.post(
    "/sign-in",
    step((ctx) => (isForm(ctx) ? signInForm(ctx, deps) : signInJson(ctx, deps))),
  );
  router.post("/sign-out", step(signOut));
  router.get("/verify-email", step(showVerifyEmail));
  router.post("/verify-email", step(verifyEmail));
  return router;
}
