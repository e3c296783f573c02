/**
 * Hosted sign-in sessions: opened by a sound authorization request, shown only to the browser
 * they are bound to, claimed by an in-game command and completed by that player's confirmation
 * (core/game-oauth/game-login-verifier.ts).
 */
import { randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { SqlRunner } from "../db/sql.ts";
import {
  AuthorizationSessionSchema,
  AuthorizationStatus,
  SignInClaimSchema,
  VerifierServerSchema,
  type AuthorizationSession,
} from "../../gen/outpost/gameoauth/v1/game_oauth_service_pb.js";
import { PlayerAuth } from "../../gen/outpost/servers/v1/resources_pb.js";
import { gameToProto, playerAuthModes } from "../convert.ts";
import { isOnline } from "../agents/presence.ts";
import { signInAllowed, type TrustSettings } from "../agents/player-trust.ts";
import { freezeOf } from "../servers/frozen.ts";
import type { CoreConfig } from "../deps.ts";

/** What a session's message depends on of the configuration: who may sign in, and the plans' limits. */
type SessionSettings = TrustSettings & Pick<CoreConfig, "plans">;
import { bindingCheck, formatLoginCode, newLoginCode, openLoginCode, sealLoginCode, type LoginCodeHasher } from "./login-codes.ts";
import { completionKey, openAsBrowser } from "./sealed-redirect.ts";
import { appNameShown, shownText } from "./shown-text.ts";
import { expireHeldLoginCode, findHostedSession, insertHostedSession, verifierServers, type HostedSessionRow } from "./game-oauth-queries.ts";

export const sessionTtlMs = 10 * 60_000;

export interface SessionClient {
  id: string;
  organizationId: string;
  name: string;
  verifierPolicy: string;
}

export interface NewSession {
  client: SessionClient;
  redirectUri: string;
  state: string;
  nonce: string | null;
  codeChallenge: string | null;
  codeChallengeMethod: string | null;
  browserBindingHash: string;
}

const uniqueViolation = (error: unknown) => (error as { code?: string })?.code === "23505";

/** Inserts a pending session with a login code no other pending session holds (new code on a collision). */
export async function insertSession(
  query: SqlRunner,
  loginCodes: LoginCodeHasher,
  session: NewSession,
  now: Date,
): Promise<{ id: string; loginCode: string; expiresAt: Date }> {
  const expiresAt = new Date(now.getTime() + sessionTtlMs);
  for (let attempt = 0; ; attempt++) {
    const id = randomUUID();
    const loginCode = newLoginCode();
    try {
      await insertHostedSession(query, {
        id,
        clientUuid: session.client.id,
        organizationId: session.client.organizationId,
        redirectUri: session.redirectUri,
        state: session.state,
        nonce: session.nonce,
        codeChallenge: session.codeChallenge,
        codeChallengeMethod: session.codeChallengeMethod,
        bindingCheck: bindingCheck(session.browserBindingHash),
        loginCodeHash: loginCodes.hash(loginCode),
        loginCodeSealed: sealLoginCode(loginCode, session.browserBindingHash),
        completionKey: completionKey(session.browserBindingHash),
        expiresAt,
        now,
      });
      return { id, loginCode, expiresAt };
    } catch (error) {
      const cause = (error as { cause?: unknown }).cause ?? error;
      if (attempt >= 4 || !(uniqueViolation(error) || uniqueViolation(cause) || (error as Error).name === "UniqueConstraintViolationException")) throw error;
      // The code is held by a pending session; one that has expired gives it up.
      await expireHeldLoginCode(query, loginCodes.hash(loginCode), now);
    }
  }
}

/** Where the app receives a sign-in, as players and the page are shown it: the redirect URI's host (and port). */
export function redirectHostOf(redirectUri: string): string {
  try {
    return new URL(redirectUri).host || redirectUri;
  } catch {
    return redirectUri;
  }
}

/** The session as its bound browser sees it at `now`, or undefined (unknown, or bound to another browser). */
export async function readSession(
  query: SqlRunner,
  sessionId: string,
  bindingHash: string,
  now: Date,
  settings: SessionSettings,
): Promise<AuthorizationSession | undefined> {
  const row = await findHostedSession(query, sessionId, bindingCheck(bindingHash));
  if (!row) return undefined;
  return sessionToProto(
    query,
    {
      ...row,
      loginCode: openLoginCode(row.login_code_sealed, bindingHash),
      redirectUrl: row.redirect_url_sealed ? openAsBrowser(row.redirect_url_sealed, bindingHash) : null,
    },
    now,
    settings,
  );
}

/** A session as its browser may see it: the sealed columns opened. */
export type SessionView = Omit<HostedSessionRow, "login_code_sealed" | "redirect_url_sealed"> & { loginCode: string; redirectUrl: string | null };

/**
 * Builds the message; lists the allowed servers under selected_servers, with their presence now
 * and whether each can sign players in. Frozen servers (core/servers/frozen.ts) are left out: no
 * one can sign in on them until the organization's plan or servers change.
 */
export async function sessionToProto(query: SqlRunner, row: SessionView, now: Date, settings: SessionSettings): Promise<AuthorizationSession> {
  const expiresAt = new Date(row.expires_at);
  const anyServer = row.verifier_policy === "any_server";
  const servers = anyServer ? [] : (await verifierServers(query, row.client_id)).filter((s) => !freezeOf(settings, s.plan, s.rank));
  const status =
    row.status === "completed"
      ? AuthorizationStatus.COMPLETED
      : row.status === "expired" || expiresAt.getTime() <= now.getTime()
        ? AuthorizationStatus.EXPIRED
        : AuthorizationStatus.PENDING;
  const shown = formatLoginCode(row.loginCode);
  const claimedUntil = row.claimed_until ? new Date(row.claimed_until) : undefined;
  // A claim whose server was deleted since can no longer be confirmed: the page does not show it.
  const claimed = status === AuthorizationStatus.PENDING && claimedUntil && claimedUntil.getTime() > now.getTime() && row.claimed_server_name !== null;
  return create(AuthorizationSessionSchema, {
    sessionId: row.id,
    loginCode: shown,
    command: `/outpost login ${shown}`,
    clientName: appNameShown(row.client_name),
    anyServer,
    servers: servers.map((s) =>
      create(VerifierServerSchema, {
        id: s.id,
        name: shownText(s.name),
        game: gameToProto(s.game),
        online: isOnline({ online: s.online, lastSeenAt: s.last_seen_at ? new Date(s.last_seen_at) : null }, now),
        playerAuth: (s.player_auth && playerAuthModes[s.player_auth]) || PlayerAuth.UNSPECIFIED,
        signInAllowed: signInAllowed(s.player_auth, settings),
      }),
    ),
    expiresAt: timestampFromDate(expiresAt),
    status,
    redirectUrl: status === AuthorizationStatus.COMPLETED ? (row.redirectUrl ?? "") : "",
    redirectHost: redirectHostOf(row.redirect_uri),
    claim: claimed
      ? create(SignInClaimSchema, {
          playerName: shownText(row.claimed_player_name ?? ""),
          serverName: shownText(row.claimed_server_name!),
          expiresAt: timestampFromDate(claimedUntil),
        })
      : undefined,
  });
}
