/**
 * Authentication: turning a presented credential (a session token, a user or organization API
 * key, a server's agent key) into who is calling. Every check that decides whether a credential
 * still works lives here; what the caller may then do is core/access.ts's alone.
 *
 * Every call to a user-facing service looks its credential up, so the lookups are gathered: while
 * one lookup statement of a kind is on its way, those that arrive meanwhile go together in the next
 * (core/gather.ts), and a script's burst of calls with one key costs the database a statement per
 * few calls. A lookup is never answered from a statement sent before it arrived, so a key revoked
 * or a session ended before a call came is refused to that call.
 *
 * A call about one server (contract/services.ts serverScoped) has its server's id looked up with
 * the credential: the same statement reads the caller's access to that server, which comes back
 * as the call's {@link ServerScope} beside the caller, for the call's access check to use instead of
 * reading it again (one round trip instead of two on the calls scripts make most).
 */
import type { EntityManager } from "@mikro-orm/postgresql";
import { SpanStatusCode, trace } from "@opentelemetry/api";
import { apiKeyHeader, sessionHeader } from "../../contract/credentials.ts";
import { hashSecret, looksLike } from "../../contract/secrets.ts";
import type { User } from "../db/entities.ts";
import type { Statements } from "../db/sql.ts";
import type { SqlRunner } from "../db/sql.ts";
import type { Clock } from "../clock.ts";
import { fail } from "../errors.ts";
import { createGatherer, stalledAfterMs } from "../gather.ts";
import type { AgentCaller, CallerUser, ServerScope, UserCaller } from "../context.ts";
import { lastUsedResolutionMs, sessionEndsAt, touchSession } from "./sessions.ts";
import { findAgentKeyServer, findApiKeys, findSessions, recordApiKeyUse, type CredentialLookup, type WithServerAccess } from "./auth-queries.ts";

/** The user credential a call's headers carry: a session token, an API key, or neither. */
export interface PresentedCredential {
  session: string | null;
  apiKey: string | null;
}

export function presentedCredential(header: Headers): PresentedCredential {
  return { session: header.get(sessionHeader), apiKey: header.get(apiKeyHeader) };
}

/** What `unauthenticated` says when the presented credential does not work. */
export function credentialRefusal(presented: PresentedCredential): string {
  return presented.session ? "the session has ended; sign in again" : "the API key is invalid, expired or revoked";
}

/** Who presented a working user credential, and, for a call about one server, their access to it. */
export interface Authenticated {
  caller: UserCaller;
  scope?: ServerScope;
}

export interface CredentialStore {
  /**
   * The caller of the presented session (or else API key), or null when it does not work. A use is
   * recorded (at most once a minute), which moves a session's idle deadline on. With `serverId`,
   * the same statement reads the caller's access to that server.
   */
  user(presented: PresentedCredential, serverId?: string): Promise<Authenticated | null>;
  /**
   * A long stream's repeated check that the credential it was opened with still works: a sign-out,
   * an ended session or a revoked key ends the stream (`unauthenticated`).
   */
  recheck(header: Headers): Promise<UserCaller>;
  /** The agent of the server holding this agent key, or null if no server holds it (any more). */
  agent(key: string): Promise<AgentCaller | null>;
}

export function toCallerUser(user: User | CallerUser): CallerUser {
  return { id: user.id, email: user.email, name: user.name, platformAdmin: user.platformAdmin };
}

/** The most lookups one statement carries. */
const maxBatch = 64;

/**
 * A lookup statement held up by a hung connection stops only its own lookups (core/gather.ts
 * stalledAfterMs), which fail (unavailable) once it has had no answer for this long; the
 * connection is dropped.
 */
export const lookupTimeoutMs = 5_000;

export interface CredentialStoreDeps {
  statements: Statements;
  /** Outside any transaction (the root's fork): the lookups and the recorded uses are nobody's unit of work. */
  em: EntityManager;
  clock: Clock;
  sessionIdleSeconds: number;
}

/** The times are {@link stalledAfterMs} and {@link lookupTimeoutMs} unless a test says otherwise. */
export function createCredentialStore(deps: CredentialStoreDeps, { stallMs = stalledAfterMs, timeoutMs = lookupTimeoutMs } = {}): CredentialStore {
  const lookups = () => deps.statements.on(deps.em, { timeoutMs });
  const writes = () => deps.statements.on(deps.em);
  const sessions = gathered((batch) => findSessions(lookups(), batch), stallMs);
  const apiKeys = gathered((batch) => findApiKeys(lookups(), batch), stallMs);

  async function session(token: string, serverId: string | undefined): Promise<Authenticated | null> {
    if (!looksLike("session", token)) return null;
    const row = await sessions({ hash: hashSecret(token), serverId });
    if (!row) return null;
    const found = { id: row.id, expiresAt: row.expires_at!, lastUsedAt: row.last_used_at! };
    const now = deps.clock.now();
    if (sessionEndsAt(found, deps.sessionIdleSeconds) <= now) return null;
    await touchSession(writes(), found, now);
    return authenticated(row, { kind: "session", id: row.id, expiresAt: found.expiresAt }, serverId);
  }

  async function apiKey(key: string, serverId: string | undefined): Promise<Authenticated | null> {
    if (!looksLike("apiKey", key)) return null;
    const row = await apiKeys({ hash: hashSecret(key), serverId });
    const now = deps.clock.now();
    if (!row || row.revoked_at || (row.expires_at && row.expires_at <= now)) return null;
    await touchApiKey(writes(), { id: row.id, lastUsedAt: row.last_used_at }, now);
    const organization = row.organization_id ? { id: row.organization_id, slug: row.organization_slug! } : undefined;
    return authenticated(row, { kind: "api_key", id: row.id, expiresAt: row.expires_at, ...(organization && { organization }) }, serverId);
  }

  const store: CredentialStore = {
    user(presented, serverId) {
      if (presented.session) return session(presented.session, serverId);
      if (presented.apiKey) return apiKey(presented.apiKey, serverId);
      return Promise.resolve(null);
    },
    async recheck(header) {
      const presented = presentedCredential(header);
      const found = await store.user(presented);
      if (!found) throw fail("unauthenticated", credentialRefusal(presented));
      return found.caller;
    },
    async agent(key) {
      if (!looksLike("agentKey", key)) return null;
      const keyHash = hashSecret(key);
      const row = await findAgentKeyServer(writes(), keyHash);
      if (!row) return null;
      return {
        kind: "agent",
        server: { id: row.id, organizationId: row.organization_id, organizationSlug: row.slug, name: row.name, game: row.game },
        keyHash,
      };
    },
  };
  return store;
}

function authenticated(
  row: { user_id: string; email: string; name: string; platform_admin: boolean } & WithServerAccess,
  credential: UserCaller["credential"],
  serverId: string | undefined,
): Authenticated {
  const caller: UserCaller = { kind: "user", user: { id: row.user_id, email: row.email, name: row.name, platformAdmin: row.platform_admin }, credential };
  return serverId === undefined ? { caller } : { caller, scope: { serverId, access: row.server_access ?? undefined } };
}

/**
 * Records a use of an API key (shown in the key list), at most once a minute; the statement checks
 * the age again, so of many requests that all read a stale use, one writes.
 */
export async function touchApiKey(query: SqlRunner, key: { id: string; lastUsedAt: Date | null }, now: Date): Promise<void> {
  if (key.lastUsedAt && now.getTime() - key.lastUsedAt.getTime() < lastUsedResolutionMs) return;
  await recordApiKeyUse(query, key.id, now, new Date(now.getTime() - lastUsedResolutionMs));
}

/**
 * One kind's lookups gathered; the same lookup twice in one batch (one key, one server: a script's
 * burst) is asked once and both get the row.
 */
function gathered<T>(find: (lookups: readonly CredentialLookup[]) => Promise<Array<T | undefined>>, stallMs: number) {
  const key = (l: CredentialLookup) => `${l.hash}\u0000${l.serverId ?? ""}`;
  const gatherer = createGatherer<CredentialLookup, T | undefined>(
    async (lookups) => {
      const distinct = new Map<string, number>();
      const asked: CredentialLookup[] = [];
      // Each lookup's position among the distinct ones asked.
      const at = lookups.map((lookup) => {
        const k = key(lookup);
        let i = distinct.get(k);
        if (i === undefined) distinct.set(k, (i = asked.push(lookup) - 1));
        return i;
      });
      const rows = await find(asked);
      return at.map((i) => rows[i]);
    },
    { maxBatch, stallMs },
  );
  // The statement is several calls', so it has no span of its own in a trace (core/gather.ts); each
  // call's trace shows how long it waited for its lookup instead.
  const tracer = trace.getTracer("outpost.db");
  return (lookup: CredentialLookup) =>
    tracer.startActiveSpan("credential lookup", (span) =>
      gatherer.submit(lookup).then(
        (row) => (span.end(), row),
        (error: unknown) => {
          span.setStatus({ code: SpanStatusCode.ERROR });
          span.end();
          throw error;
        },
      ),
    );
}
