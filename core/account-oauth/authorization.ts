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
import { randomUUID } from "node:crypto";
import type { EntityManager } from "@mikro-orm/postgresql";
import type { Query } from "../db/statements.ts";
import type { CoreDeps } from "../deps.ts";
import { recordActivity } from "../activity/record.ts";
import { redirectUriMatches } from "../oauth/redirect-uris.ts";
import { appendQuery, checkAuthorizationParams, type AuthorizationParams } from "../oauth/authorization-request.ts";
import { authorizationCodeTtlMs } from "../oauth/token-engine.ts";
import { hashSecret, issueSecret, looksLike } from "../../contract/secrets.ts";
import { accountScopes } from "./tokens.ts";
import { sessionEndsAt, touchSession } from "../auth/sessions.ts";

export const requestTtlMs = 10 * 60_000;

export type Step =
  | { case: "pageError"; value: { error: string; description: string } }
  | { case: "redirectUrl"; value: string }
  | { case: "signIn"; value: { requestId: string; reason: "" | "login" | "max_age" } }
  | {
      case: "consent";
      value: { requestId: string; clientName: string; scopes: string[]; newScopes: string[]; userEmail: string; userName: string };
    };

export interface StartInput extends AuthorizationParams {
  clientId: string;
  redirectUri: string;
  nonce: string;
  prompt: string;
  maxAge: string;
  sessionToken: string;
}

type Deps = Pick<CoreDeps, "clock" | "config" | "statements">;

interface RequestRow {
  id: string;
  client_uuid: string;
  public_client_id: string;
  client_name: string;
  skip_consent: boolean;
  disabled: boolean;
  redirect_uri: string;
  state: string;
  scopes: string[];
  nonce: string | null;
  code_challenge: string | null;
  code_challenge_method: string | null;
  prompt_login: boolean;
  prompt_consent: boolean;
  prompt_none: boolean;
  max_age: number | null;
  user_id: string | null;
  status: string;
  expires_at: Date;
  created_at: Date;
}

interface SessionUser {
  id: string;
  email: string;
  name: string;
  /** When the user signed in: the session's creation. */
  authTime: Date;
}

const pageError = (error: string, description: string): Step => ({ case: "pageError", value: { error, description } });
const requestGone = () => pageError("invalid_request", "this sign-in request is unknown, finished or expired; start again from the app");

const promptValues = new Set(["none", "login", "consent", "select_account"]);

/** A time as the ID token's auth_time counts it: whole seconds since the epoch. */
const wholeSeconds = (time: Date) => Math.floor(time.getTime() / 1000);

/**
 * The signed-in user of a live dashboard session (neither expired nor idle too long), with the
 * time they signed in. Counts as a use of the session.
 */
async function sessionUser(query: Query, token: string, now: Date, idleSeconds: number): Promise<SessionUser | null> {
  if (!token || !looksLike("session", token)) return null;
  const [row] = await query<{ id: string; email: string; name: string; session_id: string; created_at: Date; expires_at: Date; last_used_at: Date }>(
    `select u.id, u.email, u.name, s.id as session_id, s.created_at, s.expires_at, s.last_used_at
       from sessions s join users u on u.id = s.user_id where s.token_hash = ?`,
    [hashSecret(token)],
  );
  if (!row) return null;
  const session = { id: row.session_id, expiresAt: new Date(row.expires_at), lastUsedAt: new Date(row.last_used_at) };
  if (sessionEndsAt(session, idleSeconds) <= now) return null;
  await touchSession(query, session, now);
  return { id: row.id, email: row.email, name: row.name, authTime: new Date(row.created_at) };
}

const requestSelect = `select r.*, c.id as client_uuid, c.client_id as public_client_id, c.name as client_name, c.skip_consent, c.disabled
  from account_authorization_requests r join oauth_provider_clients c on c.id = r.oauth_provider_client_id`;

async function findRequest(em: EntityManager, requestId: string, now: Date): Promise<RequestRow | null> {
  if (!looksLike("accountAuthorizationRequest", requestId)) return null;
  const [row] = await em.execute<RequestRow[]>(`${requestSelect} where r.request_hash = ?`, [hashSecret(requestId)]);
  if (!row || row.status !== "pending" || new Date(row.expires_at).getTime() <= now.getTime()) return null;
  return row;
}

export function createAccountAuthorization(deps: Deps) {
  const issuer = () => deps.config.accountIssuerUrl;

  /** Ends the request; false when it had already ended. */
  async function finish(em: EntityManager, row: RequestRow): Promise<boolean> {
    const [done] = await em.execute<Array<{ id: string }>>(
      `update account_authorization_requests set status = 'completed' where id = ? and status = 'pending' returning id`,
      [row.id],
    );
    return done !== undefined;
  }

  const errorRedirect = (row: RequestRow, error: string, description: string): Step => ({
    case: "redirectUrl",
    value: appendQuery(row.redirect_uri, { error, error_description: description, state: row.state, iss: issuer() }),
  });

  async function redirectError(em: EntityManager, row: RequestRow, error: string, description: string): Promise<Step> {
    return (await finish(em, row)) ? errorRedirect(row, error, description) : requestGone();
  }

  /** Records what `user` did about the request's app, in the transaction `tx`. */
  function recordDecision(tx: EntityManager, user: SessionUser, row: RequestRow, action: string): void {
    recordActivity(tx, { kind: "account", userId: user.id, email: user.email }, {
      action,
      targetType: "oauth_provider_client",
      targetId: row.public_client_id,
      details: { clientName: row.client_name, scopes: row.scopes.join(" ") },
    });
  }

  /** Ends the request with a code for `user`; consent (when given now) is stored in the same transaction. */
  async function issueCode(em: EntityManager, row: RequestRow, user: SessionUser, grantConsent: boolean): Promise<Step> {
    const now = deps.clock.now();
    const code = issueSecret("accountAuthorizationCode");
    const issued = await em.transactional(async (tx) => {
      if (!(await finish(tx, row))) return false;
      if (grantConsent) {
        await tx.execute(
          `insert into account_consents (id, user_id, oauth_provider_client_id, scopes, created_at, updated_at) values (?, ?, ?, ?, ?, ?)
           on conflict (user_id, oauth_provider_client_id) do update
             set scopes = (select jsonb_agg(distinct s) from jsonb_array_elements_text(account_consents.scopes || excluded.scopes) s),
                 updated_at = excluded.updated_at`,
          [randomUUID(), user.id, row.client_uuid, JSON.stringify(row.scopes), now, now],
          "run",
        );
        recordDecision(tx, user, row, "account_consent.granted");
      }
      await tx.execute(
        `insert into account_authorization_codes (id, code_hash, oauth_provider_client_id, user_id, redirect_uri, scopes, nonce,
           code_challenge, code_challenge_method, auth_time, expires_at, created_at)
         values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        [
          randomUUID(), code.hash, row.client_uuid, user.id, row.redirect_uri, JSON.stringify(row.scopes), row.nonce,
          row.code_challenge, row.code_challenge_method, user.authTime, new Date(now.getTime() + authorizationCodeTtlMs), now,
        ],
        "run",
      );
      recordDecision(tx, user, row, "account_oauth.sign_in");
      return true;
    });
    if (!issued) return requestGone();
    return { case: "redirectUrl", value: appendQuery(row.redirect_uri, { code: code.value, state: row.state, iss: issuer() }) };
  }

  /** Takes a pending request as far as the browser's session allows. */
  async function advance(em: EntityManager, row: RequestRow, requestId: string, sessionToken: string): Promise<Step> {
    const now = deps.clock.now();
    if (row.disabled) return pageError("unauthorized_client", "this app's sign-in is disabled");
    const user = await sessionUser(deps.statements.on(em), sessionToken, now, deps.config.sessionIdleSeconds);
    const signIn = (reason: "" | "login" | "max_age"): Promise<Step> | Step =>
      row.prompt_none
        ? redirectError(em, row, "login_required", "the user is not signed in (prompt=none)")
        : { case: "signIn", value: { requestId, reason } };
    if (!user) return signIn("");
    if (row.prompt_login && user.authTime.getTime() < new Date(row.created_at).getTime()) return signIn("login");
    // max_age=0 is prompt=login, checked above; auth_time and max_age count whole seconds.
    if (row.max_age !== null && row.max_age > 0 && wholeSeconds(now) - wholeSeconds(user.authTime) > row.max_age) {
      return row.prompt_none ? redirectError(em, row, "login_required", "the sign-in is older than max_age allows") : signIn("max_age");
    }
    if (row.skip_consent) return issueCode(em, row, user, false);
    const [consent] = await em.execute<Array<{ scopes: string[] }>>(
      `select scopes from account_consents where user_id = ? and oauth_provider_client_id = ?`,
      [user.id, row.client_uuid],
    );
    const newScopes = row.scopes.filter((s) => !consent?.scopes.includes(s));
    if (!row.prompt_consent && newScopes.length === 0) return issueCode(em, row, user, false);
    if (row.prompt_none) return redirectError(em, row, "consent_required", "the user has not consented to this app (prompt=none)");
    // The consent page belongs to this user: another account signing in on the same browser
    // takes the request over (and is asked itself).
    await em.execute(`update account_authorization_requests set user_id = ? where id = ?`, [user.id, row.id], "run");
    return {
      case: "consent",
      value: { requestId, clientName: row.client_name, scopes: row.scopes, newScopes, userEmail: user.email, userName: user.name },
    };
  }

  return {
    async start(em: EntityManager, input: StartInput): Promise<Step> {
      const now = deps.clock.now();
      const [client] = input.clientId
        ? await em.execute<Array<{ id: string; name: string; redirect_uris: string[]; skip_consent: boolean; disabled: boolean }>>(
            `select id, name, redirect_uris, skip_consent, disabled from oauth_provider_clients where client_id = ?`,
            [input.clientId],
          )
        : [];
      if (!client) return pageError("invalid_client", "unknown client_id");
      if (client.disabled) return pageError("unauthorized_client", "this app's sign-in is disabled");
      if (!input.redirectUri || !redirectUriMatches(client.redirect_uris, input.redirectUri)) {
        return pageError("invalid_request", "redirect_uri is not one this app registered");
      }
      const back = (error: string, description: string): Step => ({
        case: "redirectUrl",
        value: appendQuery(input.redirectUri, { error, error_description: description, ...(input.state && { state: input.state }), iss: issuer() }),
      });
      const checked = checkAuthorizationParams(input, accountScopes);
      if ("error" in checked) return back(checked.error, checked.description);
      if (!checked.scopes.includes("openid")) return back("invalid_scope", "scope must include openid");
      const prompts = input.prompt.split(" ").filter(Boolean);
      if (prompts.some((p) => !promptValues.has(p))) return back("invalid_request", "prompt may hold none, login, consent or select_account");
      if (prompts.includes("none") && prompts.length > 1) return back("invalid_request", "prompt=none cannot be combined with other values");
      if (input.maxAge && !/^\d{1,9}$/.test(input.maxAge)) return back("invalid_request", "max_age must be a whole number of seconds");
      const maxAge = input.maxAge ? Number(input.maxAge) : null;

      const requestId = issueSecret("accountAuthorizationRequest");
      // The stored request, as findRequest would read it back.
      const row: RequestRow = {
        id: randomUUID(),
        client_uuid: client.id,
        public_client_id: input.clientId,
        client_name: client.name,
        skip_consent: client.skip_consent,
        disabled: client.disabled,
        redirect_uri: input.redirectUri,
        state: input.state,
        scopes: checked.scopes,
        nonce: input.nonce || null,
        code_challenge: checked.codeChallenge,
        code_challenge_method: checked.codeChallengeMethod,
        prompt_login: prompts.includes("login") || maxAge === 0,
        prompt_consent: prompts.includes("consent"),
        prompt_none: prompts.includes("none"),
        max_age: maxAge,
        user_id: null,
        status: "pending",
        expires_at: new Date(now.getTime() + requestTtlMs),
        created_at: now,
      };
      await em.execute(
        `insert into account_authorization_requests (id, request_hash, oauth_provider_client_id, redirect_uri, state, scopes, nonce,
           code_challenge, code_challenge_method, prompt_login, prompt_consent, prompt_none, max_age, status, expires_at, created_at)
         values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        [
          row.id, requestId.hash, row.client_uuid, row.redirect_uri, row.state, JSON.stringify(row.scopes), row.nonce,
          row.code_challenge, row.code_challenge_method, row.prompt_login, row.prompt_consent, row.prompt_none,
          row.max_age, row.status, row.expires_at, row.created_at,
        ],
        "run",
      );
      return advance(em, row, requestId.value, input.sessionToken);
    },

    async continue(em: EntityManager, requestId: string, sessionToken: string): Promise<Step> {
      const row = await findRequest(em, requestId, deps.clock.now());
      if (!row) return requestGone();
      return advance(em, row, requestId, sessionToken);
    },

    async decide(em: EntityManager, requestId: string, sessionToken: string, allow: boolean): Promise<Step> {
      const now = deps.clock.now();
      const row = await findRequest(em, requestId, now);
      if (!row) return requestGone();
      const user = await sessionUser(deps.statements.on(em), sessionToken, now, deps.config.sessionIdleSeconds);
      // Only the user the consent page was shown to may answer it; anyone else starts over.
      if (!user || row.user_id !== user.id) return advance(em, row, requestId, sessionToken);
      if (row.disabled) return pageError("unauthorized_client", "this app's sign-in is disabled");
      if (allow) return issueCode(em, row, user, true);
      // The request ends and the refusal is recorded together, or neither.
      const denied = await em.transactional(async (tx) => {
        if (!(await finish(tx, row))) return false;
        recordDecision(tx, user, row, "account_consent.denied");
        return true;
      });
      return denied ? errorRedirect(row, "access_denied", "the user denied the request") : requestGone();
    },
  };
}
