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
import { createClient, type Transport } from "@connectrpc/connect";
import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import type { Context } from "koa";
import { IdentityService, type SignInResponse, type SignUpResponse } from "../gen/outpost/identity/v1/identity_service_pb.js";
import { AuthService } from "../gen/outpost/auth/v1/auth_service_pb.js";
import { knownDeviceCookie, sessionHeader } from "../contract/credentials.ts";
import { mediaType, readFields, stringField } from "./body.ts";
import { clearSessionCookieHeader, httpOnlyCookieHeader, readCookie, readSessionCookie, sessionCookieHeader } from "./cookies.ts";
import { errorBody, rateLimitHeaders, violationDetails, type ErrorBody } from "./errors.ts";
import { formToken, formTokenMatches } from "./form-token.ts";
import { redirectingFormPolicy, sendPage } from "./pages.ts";
import { accountErrorPage, signInPage, signOutPage, signUpPage } from "./account-pages/pages.ts";
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

export function createAccountRoutes({ transport, secureCookies }: AccountRoutesOptions): Router {
  const identity = createClient(IdentityService, transport);
  const auth = createClient(AuthService, transport);
  const router = new Router();
  const client = (ctx: Context) => ({ ip: ctx.ip.slice(0, 64), userAgent: (ctx.get("user-agent") || "").slice(0, 512) });
  /** Sets the session cookie, and the known-device cookie that marks this browser as the account's. */
  const startSession = (ctx: Context, res: SignInResponse | SignUpResponse) => {
    const maxAge = (at: Timestamp | undefined) => (timestampDate(at!).getTime() - Date.now()) / 1000;
    ctx.append("Set-Cookie", sessionCookieHeader(res.sessionToken, maxAge(res.sessionExpiresAt), secureCookies));
    if (res.deviceToken) ctx.append("Set-Cookie", httpOnlyCookieHeader(knownDeviceCookie, res.deviceToken, maxAge(res.deviceTokenExpiresAt), secureCookies));
    ctx.set("Cache-Control", "no-store");
  };
  const deviceToken = (ctx: Context) => (readCookie(ctx.req.headers, knownDeviceCookie, secureCookies) ?? "").slice(0, 256);
  const isForm = (ctx: Context) => mediaType(ctx) === "application/x-www-form-urlencoded";

  /** Reads a form POST, or answers 403 with a page when its form token is not this browser's. */
  async function readForm(ctx: Context): Promise<Record<string, unknown> | undefined> {
    const fields = await readFields(ctx);
    if (formTokenMatches(ctx, fields, secureCookies)) return fields;
    sendPage(ctx, 403, accountErrorPage("This form has expired", "forbidden", "the form was not sent from this site's page, or it is too old; go back, reload the page and try again"));
    return undefined;
  }

  /** The answer to show for a refused core call (its Retry-After set on the response); a 5xx is thrown on. */
  function refusal(ctx: Context, error: unknown): ErrorBody {
    const body = errorBody(error, ctx.state.requestId);
    for (const [name, value] of Object.entries(rateLimitHeaders(error) ?? {})) ctx.set(name, value);
    if (body.status >= 500) throw error;
    return body;
  }

  router.get("/sign-in", (ctx) => {
    const returnTo = safeReturnPath(ctx.query.return_to);
    const reason = typeof ctx.query.reason === "string" ? ctx.query.reason : "";
    sendPage(ctx, 200, signInPage({ formToken: formToken(ctx, secureCookies), returnTo, notice: signInNotices[reason] }), redirectingFormPolicy);
  });

  router.get("/sign-up", (ctx) => {
    sendPage(ctx, 200, signUpPage({ formToken: formToken(ctx, secureCookies), returnTo: safeReturnPath(ctx.query.return_to) }), redirectingFormPolicy);
  });

  router.get("/sign-out", async (ctx) => {
    const token = readSessionCookie(ctx.req.headers, secureCookies);
    let email: string | undefined;
    if (token) {
      email = await auth
        .getSession({}, { headers: { [sessionHeader]: token } })
        .then((s) => s.user?.email)
        .catch(() => undefined);
    }
    sendPage(ctx, 200, signOutPage(formToken(ctx, secureCookies), email));
  });

  router.post("/sign-up", async (ctx) => {
    if (!isForm(ctx)) {
      const fields = await readFields(ctx);
      const res = await identity.signUp({ email: stringField(fields, "email"), password: stringField(fields, "password"), name: stringField(fields, "name"), client: client(ctx) });
      startSession(ctx, res);
      ctx.status = 201;
      ctx.body = { user: publicUser(res.user) };
      return;
    }
    const fields = await readForm(ctx);
    if (!fields) return;
    const values = { name: stringField(fields, "name").trim(), email: stringField(fields, "email").trim() };
    const returnTo = safeReturnPath(fields.return_to);
    try {
      const res = await identity.signUp({ ...values, password: stringField(fields, "password"), client: client(ctx) });
      startSession(ctx, res);
      ctx.status = 303;
      ctx.redirect(returnTo || dashboardHome);
    } catch (error) {
      const { status, message, reason } = refusal(ctx, error);
      const fieldErrors: Partial<Record<"name" | "email" | "password", string>> = {};
      for (const v of violationDetails(error) ?? []) {
        if (v.field === "name" || v.field === "email" || v.field === "password") fieldErrors[v.field] ??= v.message;
      }
      if (reason === "email_taken") fieldErrors.email = message;
      const general = Object.keys(fieldErrors).length ? "Check the fields marked below." : message;
      sendPage(ctx, status, signUpPage({ formToken: formToken(ctx, secureCookies), returnTo, ...values, error: general, fieldErrors }), redirectingFormPolicy);
    }
  });

  router.post("/sign-in", async (ctx) => {
    if (!isForm(ctx)) {
      const fields = await readFields(ctx);
      const res = await identity.signIn({ email: stringField(fields, "email"), password: stringField(fields, "password"), client: client(ctx), deviceToken: deviceToken(ctx) });
      startSession(ctx, res);
      ctx.body = { user: publicUser(res.user) };
      return;
    }
    const fields = await readForm(ctx);
    if (!fields) return;
    const email = stringField(fields, "email").trim();
    const returnTo = safeReturnPath(fields.return_to);
    try {
      const res = await identity.signIn({ email, password: stringField(fields, "password"), client: client(ctx), deviceToken: deviceToken(ctx) });
      startSession(ctx, res);
      ctx.status = 303;
      ctx.redirect(returnTo || dashboardHome);
    } catch (error) {
      const { status, reason } = refusal(ctx, error);
      // Validation details (a malformed email) say nothing about accounts; anything else is
      // core's one answer for every failure, or the rate limit's, or the password checks' cap.
      const text =
        reason === "server_busy"
          ? "Too many sign-ins are being checked right now. Wait a second and try again."
          : status === 429
          ? `Too many sign-in attempts. Wait ${ctx.response.get("Retry-After") || "a minute"} seconds and try again.`
          : status === 400
            ? "Enter your email address and password."
            : "Wrong email or password.";
      sendPage(ctx, status, signInPage({ formToken: formToken(ctx, secureCookies), returnTo, email, error: text }), redirectingFormPolicy);
    }
  });

  router.post("/sign-out", async (ctx) => {
    const form = isForm(ctx);
    if (form && !(await readForm(ctx))) return;
    const token = readSessionCookie(ctx.req.headers, secureCookies);
    if (token) await identity.signOut({ sessionToken: token });
    ctx.append("Set-Cookie", clearSessionCookieHeader(secureCookies));
    if (form) {
      ctx.status = 303;
      ctx.redirect("/sign-in");
      return;
    }
    ctx.status = 204;
  });

  return router;
}
