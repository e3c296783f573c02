/**
 * Hosted sign-in sessions: opened by a sound authorization request, shown only to the browser
 * they are bound to, claimed by an in-game command and completed by that player's confirmation
 * (core/game-oauth/game-login-verifier.ts).
 */
import { randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { EntityManager } from "@mikro-orm/postgresql";
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
import { bindingCheck, formatLoginCode, newLoginCode, openLoginCode, sealLoginCode, type LoginCodeHasher } from "./login-codes.ts";
import { completionKey, openAsBrowser } from "./sealed-redirect.ts";
import { appNameShown, shownText } from "./shown-text.ts";

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
  em: EntityManager,
  loginCodes: LoginCodeHasher,
  session: NewSession,
  now: Date,
): Promise<{ id: string; loginCode: string; expiresAt: Date }> {
  const expiresAt = new Date(now.getTime() + sessionTtlMs);
  for (let attempt = 0; ; attempt++) {
    const id = randomUUID();
    const loginCode = newLoginCode();
    try {
      await em.execute(
        `insert into hosted_authorizations (id, game_oauth_client_id, organization_id, redirect_uri, state, nonce, code_challenge,
           code_challenge_method, browser_binding_check, login_code_hash, login_code_sealed, completion_key, status, expires_at, created_at)
         values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?)`,
        [
          id, session.client.id, session.client.organizationId, session.redirectUri, session.state, session.nonce,
          session.codeChallenge, session.codeChallengeMethod, bindingCheck(session.browserBindingHash),
          loginCodes.hash(loginCode), sealLoginCode(loginCode, session.browserBindingHash), completionKey(session.browserBindingHash),
          expiresAt, now,
        ],
        "run",
      );
      return { id, loginCode, expiresAt };
    } catch (error) {
      const cause = (error as { cause?: unknown }).cause ?? error;
      if (attempt >= 4 || !(uniqueViolation(error) || uniqueViolation(cause) || (error as Error).name === "UniqueConstraintViolationException")) throw error;
      // The code is held by a pending session; one that has expired gives it up.
      await em.execute(`update hosted_authorizations set status = 'expired' where login_code_hash = ? and status = 'pending' and expires_at <= ?`, [loginCodes.hash(loginCode), now], "run");
    }
  }
}

interface SessionRow {
  id: string;
  status: string;
  expires_at: Date;
  login_code_sealed: string;
  redirect_url_sealed: string | null;
  redirect_uri: string;
  client_name: string;
  verifier_policy: string;
  client_id: string;
  /** The claim, if any (it may have run out: see {@link sessionToProto}). */
  claimed_player_name: string | null;
  claimed_server_name: string | null;
  claimed_until: Date | null;
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
  em: EntityManager,
  sessionId: string,
  bindingHash: string,
  now: Date,
  settings: TrustSettings,
): Promise<AuthorizationSession | undefined> {
  const [row] = await em.execute<SessionRow[]>(
    `select h.id, h.status, h.expires_at, h.login_code_sealed, h.redirect_url_sealed, h.redirect_uri,
            c.name as client_name, c.verifier_policy, c.id as client_id,
            h.claimed_player_name, s.name as claimed_server_name, h.claimed_until
       from hosted_authorizations h join game_oauth_clients c on c.id = h.game_oauth_client_id
       left join servers s on s.id = h.claimed_server_id
      where h.id = ? and h.browser_binding_check = ?`,
    [sessionId, bindingCheck(bindingHash)],
  );
  if (!row) return undefined;
  return sessionToProto(
    em,
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
export type SessionView = Omit<SessionRow, "login_code_sealed" | "redirect_url_sealed"> & { loginCode: string; redirectUrl: string | null };

/**
 * Builds the message; lists the allowed servers under selected_servers, with their presence now
 * and whether each can sign players in.
 */
export async function sessionToProto(
  em: EntityManager,
  row: SessionView,
  now: Date,
  settings: TrustSettings,
): Promise<AuthorizationSession> {
  const expiresAt = new Date(row.expires_at);
  const anyServer = row.verifier_policy === "any_server";
  const servers = anyServer
    ? []
    : await em.execute<Array<{ id: string; name: string; game: string; online: boolean; last_seen_at: Date | null; player_auth: string | null }>>(
        `select s.id, s.name, s.game, s.online, s.last_seen_at, s.player_auth from game_oauth_client_servers cs join servers s on s.id = cs.server_id
          where cs.game_oauth_client_id = ? order by s.name, s.id`,
        [row.client_id],
      );
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
