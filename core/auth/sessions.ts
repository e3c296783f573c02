import type { EntityManager } from "@mikro-orm/postgresql";
import { Session, type User } from "../db/entities.ts";
import { issueSecret } from "../../contract/secrets.ts";

/** Adds a new session to the unit of work; the token is returned once and only its hash is kept. */
export function startSession(em: EntityManager, user: User, now: Date, ttlSeconds: number) {
  const secret = issueSecret("session");
  const session = em.create(Session, {
    user,
    tokenHash: secret.hash,
    expiresAt: new Date(now.getTime() + ttlSeconds * 1000),
  });
  return { session, token: secret.value };
}
