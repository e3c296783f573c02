/**
 * Turning a presented credential into a caller. Every check that decides whether a session, an
 * API key or an agent key still works lives here.
 *
 * Every request to a user-facing service passes through here, so each lookup is plain SQL
 * (credential joined to its user, core/auth/auth-queries.ts) rather than an ORM find with
 * populate: the ORM's query building costs more CPU than the query itself. A user credential's
 * lookups are gathered, several calls' in one statement (core/auth/credential-reads.ts).
 */
import type { Query } from "../db/statements.ts";
import type { User } from "../db/entities.ts";
import { apiKeyHeader, sessionHeader } from "../../contract/credentials.ts";
import { hashSecret, looksLike } from "../../contract/secrets.ts";
import { fail } from "../errors.ts";
import type { AgentCaller, CallerUser, UserCaller } from "../context.ts";
import { lastUsedResolutionMs, sessionEndsAt, touchSession } from "./sessions.ts";
import { findAgentKeyServer, recordApiKeyUse, type CredentialRow, type WithServerAccess } from "./auth-queries.ts";
import type { CredentialReads } from "./credential-reads.ts";

export function toCallerUser(user: User | CallerUser): CallerUser {
  return { id: user.id, email: user.email, name: user.name, platformAdmin: user.platformAdmin };
}

function caller(row: CredentialRow & WithServerAccess, kind: "session" | "api_key", serverId: string | undefined): UserCaller {
  const found: UserCaller = {
    kind: "user",
    user: { id: row.user_id, email: row.email, name: row.name, platformAdmin: row.platform_admin },
    credential: { kind, id: row.id, expiresAt: row.expires_at },
  };
  if (serverId !== undefined) found.serverAccess = { serverId, row: row.server_access ?? undefined };
  return found;
}

/**
 * The session's caller, or null if the token is unknown, expired, or unused for longer than
 * `idleSeconds`. A use is recorded (at most once a minute), which moves the idle deadline on.
 */
export async function resolveSession(reads: CredentialReads, query: Query, token: string, now: Date, idleSeconds: number, serverId?: string): Promise<UserCaller | null> {
  if (!looksLike("session", token)) return null;
  const row = await reads.session({ hash: hashSecret(token), serverId });
  if (!row) return null;
  const session = { id: row.id, expiresAt: new Date(row.expires_at!), lastUsedAt: new Date(row.last_used_at!) };
  if (sessionEndsAt(session, idleSeconds) <= now) return null;
  await touchSession(query, session, now);
  return caller({ ...row, expires_at: session.expiresAt }, "session", serverId);
}

/** The key's caller, or null if the key is unknown, revoked or expired. */
export async function resolveApiKey(reads: CredentialReads, query: Query, key: string, now: Date, serverId?: string): Promise<UserCaller | null> {
  if (!looksLike("apiKey", key)) return null;
  const row = await reads.apiKey({ hash: hashSecret(key), serverId });
  const expiresAt = row?.expires_at ? new Date(row.expires_at) : null;
  if (!row || row.revoked_at || (expiresAt && expiresAt <= now)) return null;
  await touchApiKey(query, { id: row.id, lastUsedAt: row.last_used_at ? new Date(row.last_used_at) : null }, now);
  const found = caller({ ...row, expires_at: expiresAt }, "api_key", serverId);
  if (row.organization_id) found.credential.organization = { id: row.organization_id, slug: row.organization_slug! };
  return found;
}

/** The user credential a call's headers carry: a session token, an API key, or neither. */
export interface PresentedCredential {
  session: string | null;
  apiKey: string | null;
}

export function presentedCredential(header: Headers): PresentedCredential {
  return { session: header.get(sessionHeader), apiKey: header.get(apiKeyHeader) };
}

/**
 * The caller of the presented session (or else API key), or null when it does not work: the auth
 * interceptor when a call opens, and a long stream again while it lasts (a sign-out, a revoked
 * key or an expired session then ends it). With `serverId` (a call about that server), the same
 * statement reads the caller's access to it ({@link UserCaller.serverAccess}).
 */
export function resolveUser(reads: CredentialReads, query: Query, presented: PresentedCredential, now: Date, idleSeconds: number, serverId?: string): Promise<UserCaller | null> {
  if (presented.session) return resolveSession(reads, query, presented.session, now, idleSeconds, serverId);
  if (presented.apiKey) return resolveApiKey(reads, query, presented.apiKey, now, serverId);
  return Promise.resolve(null);
}

/** What `unauthenticated` says when the presented credential does not work. */
export function credentialRefusal(presented: PresentedCredential): string {
  return presented.session ? "the session has ended; sign in again" : "the API key is invalid, expired or revoked";
}

/**
 * A long stream's repeated check that the credential it was opened with still works, as the auth
 * interceptor decides: a sign-out, an ended session or a revoked key ends the stream
 * (`unauthenticated`).
 */
export async function recheckCaller(reads: CredentialReads, query: Query, header: Headers, now: Date, idleSeconds: number): Promise<UserCaller> {
  const presented = presentedCredential(header);
  const caller = await resolveUser(reads, query, presented, now, idleSeconds);
  if (!caller) throw fail("unauthenticated", credentialRefusal(presented));
  return caller;
}

/**
 * Records a use of an API key (shown in the key list), at most once a minute; the statement checks
 * the age again, so of many requests that all read a stale use, one writes.
 */
export async function touchApiKey(query: Query, key: { id: string; lastUsedAt: Date | null }, now: Date): Promise<void> {
  if (key.lastUsedAt && now.getTime() - key.lastUsedAt.getTime() < lastUsedResolutionMs) return;
  await recordApiKeyUse(query, key.id, now, new Date(now.getTime() - lastUsedResolutionMs));
}

/** The agent of the server holding this agent key, or null if no server holds it (any more). */
export async function resolveAgentKey(query: Query, key: string): Promise<AgentCaller | null> {
  if (!looksLike("agentKey", key)) return null;
  const keyHash = hashSecret(key);
  const row = await findAgentKeyServer(query, keyHash);
  if (!row) return null;
  return {
    kind: "agent",
    server: { id: row.id, organizationId: row.organization_id, organizationSlug: row.slug, name: row.name, game: row.game },
    keyHash,
  };
}
