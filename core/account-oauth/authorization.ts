/**
 * An Account OAuth authorization request, from GET /api/auth/oauth2/authorize to the app's
 * redirect URI. The request is checked once and stored (10 minutes, named by a secret the
 * browser carries through the sign-in page and the consent page); each step then takes it as far
 * as the browser's session allows: to the sign-in page, to the consent page, or back to the app
 * with a code or an error. A request ends once (status flips from pending exactly once), so a
 * code is never issued twice for it.
 *
 * OpenID Connect Core 3.1.2.1: `prompt=none` never shows a page (login_required /
 * consent_required go back to the app); `prompt=login` wants a sign-in newer than the request;
 * `prompt=consent` asks even when consent was given; `max_age` wants a sign-in at most that many
 * seconds old, counted in whole seconds as the ID token's auth_time is; `max_age=0` is
 * `prompt=login` (a sign-in on this request), since no sign-in is ever 0 seconds old by the time
 * the request continues.
 */
import type { EntityManager } from "@mikro-orm/postgresql";
import type { SqlRunner } from "../db/sql.ts";
import type { CoreDeps } from "../deps.ts";
import { recordActivity } from "../activity/record.ts";
import type { ActivityAction } from "../activity/kinds.ts";
import { appendQuery } from "../oauth/authorization-request.ts";
import { authorizationCodeTtlMs } from "../oauth/token-engine.ts";
import { hashSecret, issueSecret, looksLike } from "../../contract/secrets.ts";
import { sessionEndsAt, touchSession } from "../auth/sessions.ts";
import { findSession } from "../auth/auth-queries.ts";
import { assignRequestUser, consentedScopes, findRequest, finishRequest, grantConsent, insertCode, insertRequest, type RequestRow } from "./account-oauth-queries.ts";
import { checkStart, pageError, type StartInput, type Step } from "./authorization-start.ts";

export type { StartInput, Step };

type Deps = Pick<CoreDeps, "clock" | "config" | "statements">;

interface SessionUser {
  id: string;
  email: string;
  name: string;
  /** When the user signed in: the session's creation. */
  authTime: Date;
}

const requestGone = () => pageError("invalid_request", "this sign-in request is unknown, finished or expired; start again from the app");

/** A time as the ID token's auth_time counts it: whole seconds since the epoch. */
const wholeSeconds = (time: Date) => Math.floor(time.getTime() / 1000);

/**
 * The signed-in user of a live dashboard session (neither expired nor idle too long), with the
 * time they signed in. Counts as a use of the session.
 */
async function sessionUser(query: SqlRunner, token: string, now: Date, idleSeconds: number): Promise<SessionUser | null> {
  if (!token || !looksLike("session", token)) return null;
  const row = await findSession(query, hashSecret(token));
  if (!row) return null;
  const session = { id: row.id, expiresAt: new Date(row.expires_at!), lastUsedAt: new Date(row.last_used_at!) };
  if (sessionEndsAt(session, idleSeconds) <= now) return null;
  await touchSession(query, session, now);
  return { id: row.user_id, email: row.email, name: row.name, authTime: row.created_at };
}

/** The pending, unexpired request this id names, or null. */
async function pendingRequest(query: SqlRunner, requestId: string, now: Date): Promise<RequestRow | null> {
  if (!looksLike("accountAuthorizationRequest", requestId)) return null;
  const row = await findRequest(query, hashSecret(requestId));
  if (!row || row.status !== "pending" || row.expires_at.getTime() <= now.getTime()) return null;
  return row;
}

const queryOn = (deps: Deps, em: EntityManager) => deps.statements.on(em);

function errorRedirect(deps: Deps, row: RequestRow, error: string, description: string): Step {
  const params = { error, error_description: description, state: row.state, iss: deps.config.accountIssuerUrl };
  return { case: "redirectUrl", value: appendQuery(row.redirect_uri, params) };
}

/** Ends the request with an error for the app; the request may have ended meanwhile. */
async function redirectError(deps: Deps, em: EntityManager, row: RequestRow, error: string, description: string): Promise<Step> {
  return (await finishRequest(queryOn(deps, em), row.id)) ? errorRedirect(deps, row, error, description) : requestGone();
}

/** Records what `user` did about the request's app, in the transaction `tx`. */
function recordDecision(tx: EntityManager, user: SessionUser, row: RequestRow, action: ActivityAction): void {
  recordActivity(
    tx,
    { kind: "account", userId: user.id, email: user.email },
    {
      action,
      targetType: "oauth_provider_client",
      targetId: row.public_client_id,
      details: { clientName: row.client_name, scopes: row.scopes.join(" ") },
    },
  );
}

/** Ends the request with a code for `user`; consent (when given now) is stored in the same transaction. */
async function issueCode(deps: Deps, em: EntityManager, row: RequestRow, user: SessionUser, consentGiven: boolean): Promise<Step> {
  const now = deps.clock.now();
  const code = issueSecret("accountAuthorizationCode");
  const issued = await em.transactional(async (tx) => {
    const query = queryOn(deps, tx);
    if (!(await finishRequest(query, row.id))) return false;
    if (consentGiven) {
      await grantConsent(query, user.id, row.client_uuid, row.scopes, now);
      recordDecision(tx, user, row, "account_consent.granted");
    }
    const expiresAt = new Date(now.getTime() + authorizationCodeTtlMs);
    await insertCode(query, { codeHash: code.hash, request: row, userId: user.id, authTime: user.authTime, expiresAt, now });
    recordDecision(tx, user, row, "account_oauth.sign_in");
    return true;
  });
  if (!issued) return requestGone();
  const params = { code: code.value, state: row.state, iss: deps.config.accountIssuerUrl };
  return { case: "redirectUrl", value: appendQuery(row.redirect_uri, params) };
}

/** Takes a pending request as far as the browser's session allows. */
async function advance(deps: Deps, em: EntityManager, row: RequestRow, requestId: string, sessionToken: string): Promise<Step> {
  const now = deps.clock.now();
  const query = queryOn(deps, em);
  if (row.disabled) return pageError("unauthorized_client", "this app's sign-in is disabled");
  const user = await sessionUser(query, sessionToken, now, deps.config.sessionIdleSeconds);
  const signIn = (reason: "" | "login" | "max_age"): Promise<Step> | Step =>
    row.prompt_none ? redirectError(deps, em, row, "login_required", "the user is not signed in (prompt=none)") : { case: "signIn", value: { requestId, reason } };
  if (!user) return signIn("");
  if (row.prompt_login && user.authTime.getTime() < row.created_at.getTime()) return signIn("login");
  // max_age=0 is prompt=login, checked above; auth_time and max_age count whole seconds.
  if (row.max_age !== null && row.max_age > 0 && wholeSeconds(now) - wholeSeconds(user.authTime) > row.max_age) {
    return row.prompt_none ? redirectError(deps, em, row, "login_required", "the sign-in is older than max_age allows") : signIn("max_age");
  }
  if (row.skip_consent) return issueCode(deps, em, row, user, false);
  const consented = await consentedScopes(query, user.id, row.client_uuid);
  const newScopes = row.scopes.filter((s) => !consented?.includes(s));
  if (!row.prompt_consent && newScopes.length === 0) return issueCode(deps, em, row, user, false);
  if (row.prompt_none) return redirectError(deps, em, row, "consent_required", "the user has not consented to this app (prompt=none)");
  // The consent page belongs to this user: another account signing in on the same browser
  // takes the request over (and is asked itself).
  await assignRequestUser(query, row.id, user.id);
  return {
    case: "consent",
    value: { requestId, clientName: row.client_name, scopes: row.scopes, newScopes, userEmail: user.email, userName: user.name },
  };
}

/** Checks and stores a new request (see authorization-start.ts), then advances it. */
async function start(deps: Deps, em: EntityManager, input: StartInput): Promise<Step> {
  const query = queryOn(deps, em);
  const checked = await checkStart(query, input, deps.clock.now(), deps.config.accountIssuerUrl);
  if ("step" in checked) return checked.step;
  const requestId = issueSecret("accountAuthorizationRequest");
  await insertRequest(query, checked.row, requestId.hash);
  return advance(deps, em, checked.row, requestId.value, input.sessionToken);
}

/** The browser is back from the sign-in page. */
async function resume(deps: Deps, em: EntityManager, requestId: string, sessionToken: string): Promise<Step> {
  const row = await pendingRequest(queryOn(deps, em), requestId, deps.clock.now());
  if (!row) return requestGone();
  return advance(deps, em, row, requestId, sessionToken);
}

/** The consent page's answer. */
async function decide(deps: Deps, em: EntityManager, requestId: string, sessionToken: string, allow: boolean): Promise<Step> {
  const now = deps.clock.now();
  const query = queryOn(deps, em);
  const row = await pendingRequest(query, requestId, now);
  if (!row) return requestGone();
  const user = await sessionUser(query, sessionToken, now, deps.config.sessionIdleSeconds);
  // Only the user the consent page was shown to may answer it; anyone else starts over.
  if (!user || row.user_id !== user.id) return advance(deps, em, row, requestId, sessionToken);
  if (row.disabled) return pageError("unauthorized_client", "this app's sign-in is disabled");
  if (allow) return issueCode(deps, em, row, user, true);
  // The request ends and the refusal is recorded together, or neither.
  const denied = await em.transactional(async (tx) => {
    if (!(await finishRequest(queryOn(deps, tx), row.id))) return false;
    recordDecision(tx, user, row, "account_consent.denied");
    return true;
  });
  return denied ? errorRedirect(deps, row, "access_denied", "the user denied the request") : requestGone();
}

export function createAccountAuthorization(deps: Deps) {
  return {
    start: (em: EntityManager, input: StartInput) => start(deps, em, input),
    continue: (em: EntityManager, requestId: string, sessionToken: string) => resume(deps, em, requestId, sessionToken),
    decide: (em: EntityManager, requestId: string, sessionToken: string, allow: boolean) => decide(deps, em, requestId, sessionToken, allow),
  };
}
