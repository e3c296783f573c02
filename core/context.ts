/**
 * Per-request facts, carried as Connect context values (never globals): who is calling, and the
 * request's own EntityManager.
 */
import { createContextKey, type HandlerContext } from "@connectrpc/connect";
import type { EntityManager } from "@mikro-orm/postgresql";
import { fail } from "./errors.ts";

export interface CallerUser {
  id: string;
  email: string;
  name: string;
  platformAdmin: boolean;
}

export interface UserCaller {
  kind: "user";
  user: CallerUser;
  credential: { kind: "session" | "api_key"; id: string; expiresAt: Date | null };
}

export type Caller = { kind: "anonymous" } | UserCaller;

export const callerKey = createContextKey<Caller>({ kind: "anonymous" }, { description: "outpost caller" });

export const entityManagerKey = createContextKey<EntityManager | undefined>(undefined, {
  description: "outpost request EntityManager",
});

/** The request's EntityManager, forked for it by the context interceptor. */
export function entityManager(ctx: HandlerContext): EntityManager {
  const em = ctx.values.get(entityManagerKey);
  if (!em) throw new Error("no EntityManager in the request context");
  return em;
}

/** The signed-in caller; `unauthenticated` for anyone else. */
export function requireUser(ctx: HandlerContext): UserCaller {
  const caller = ctx.values.get(callerKey);
  if (caller.kind !== "user") throw fail("unauthenticated", "sign in or send an API key");
  return caller;
}
