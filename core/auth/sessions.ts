/**
 * Dashboard sessions: how one starts, and when one still works. A session ends at its absolute
 * expiry (SESSION_TTL_DAYS after sign-in) or once unused for longer than the idle timeout
 * (SESSION_IDLE_HOURS), whichever comes first; each use moves the idle deadline on.
 */
import type { EntityManager } from "@mikro-orm/postgresql";
import { Session, type User } from "../db/entities.ts";
import type { SqlRunner } from "../db/sql.ts";
import { issueSecret } from "../../contract/secrets.ts";
import { recordSessionUse } from "./auth-queries.ts";

/**
 * How stale a credential's `last_used_at` may get before a request writes it again: most requests
 * only read, and the idle timeout is counted in hours.
 */
export const lastUsedResolutionMs = 60_000;

/** Where the session was opened from, as the edge saw it (either may be empty). */
export interface SessionClient {
  ip?: string;
  userAgent?: string;
}

/** Adds a new session to the unit of work; the token is returned once and only its hash is kept. */
export function startSession(em: EntityManager, user: User, now: Date, ttlSeconds: number, client?: SessionClient) {
  const secret = issueSecret("session");
  const session = em.create(Session, {
    user,
    tokenHash: secret.hash,
    expiresAt: new Date(now.getTime() + ttlSeconds * 1000),
    lastUsedAt: now,
    ip: client?.ip || null,
    userAgent: client?.userAgent || null,
  });
  return { session, token: secret.value };
}

/** When a session stops working: its absolute expiry, or its idle deadline if that is sooner. */
export function sessionEndsAt(session: { expiresAt: Date; lastUsedAt: Date }, idleSeconds: number): Date {
  const idleEnd = session.lastUsedAt.getTime() + idleSeconds * 1000;
  return new Date(Math.min(session.expiresAt.getTime(), idleEnd));
}

/**
 * Records a use of a live session, unless the last one recorded is under a minute old: the write
 * is what keeps the session from idling out, so it must happen, but not on every request. The
 * statement checks the age again, so of many requests that all read a stale use, one writes.
 */
export async function touchSession(query: SqlRunner, session: { id: string; lastUsedAt: Date }, now: Date): Promise<void> {
  if (now.getTime() - session.lastUsedAt.getTime() < lastUsedResolutionMs) return;
  await recordSessionUse(query, session.id, now, new Date(now.getTime() - lastUsedResolutionMs));
}
