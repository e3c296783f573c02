/**
 * Turning a presented credential into a caller. Every check that decides whether a session or
 * an API key still works lives here.
 */
import type { EntityManager } from "@mikro-orm/postgresql";
import { ApiKey, Session, type User } from "../db/entities.ts";
import { hashSecret, looksLike } from "../../contract/secrets.ts";
import type { CallerUser, UserCaller } from "../context.ts";

/** How stale `last_used_at` may get before a request writes it again (keeps reads read-only). */
const lastUsedResolutionMs = 60_000;

export function toCallerUser(user: User): CallerUser {
  return { id: user.id, email: user.email, name: user.name, platformAdmin: user.platformAdmin };
}

/** The session's caller, or null if the token is unknown or expired. */
export async function resolveSession(em: EntityManager, token: string, now: Date): Promise<UserCaller | null> {
  if (!looksLike("session", token)) return null;
  const session = await em.findOne(Session, { tokenHash: hashSecret(token) }, { populate: ["user"] });
  if (!session || session.expiresAt <= now) return null;
  return {
    kind: "user",
    user: toCallerUser(session.user),
    credential: { kind: "session", id: session.id, expiresAt: session.expiresAt },
  };
}

/** The key's caller, or null if the key is unknown, revoked or expired. */
export async function resolveApiKey(em: EntityManager, key: string, now: Date): Promise<UserCaller | null> {
  if (!looksLike("apiKey", key)) return null;
  const apiKey = await em.findOne(ApiKey, { secretHash: hashSecret(key) }, { populate: ["user"] });
  if (!apiKey || apiKey.revokedAt || (apiKey.expiresAt && apiKey.expiresAt <= now)) return null;
  if (!apiKey.lastUsedAt || now.getTime() - apiKey.lastUsedAt.getTime() > lastUsedResolutionMs) {
    await em.nativeUpdate(ApiKey, { id: apiKey.id }, { lastUsedAt: now });
  }
  return {
    kind: "user",
    user: toCallerUser(apiKey.user),
    credential: { kind: "api_key", id: apiKey.id, expiresAt: apiKey.expiresAt ?? null },
  };
}
