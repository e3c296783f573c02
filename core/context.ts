/**
 * Per-request facts, carried as Connect context values (never globals): who is calling (a user,
 * or a game server's agent), and the request's own EntityManager.
 */
import { createContextKey, type HandlerContext } from "@connectrpc/connect";
import type { EntityManager } from "@mikro-orm/postgresql";
import { fail } from "./errors.ts";
import type { ServerAccessRow } from "./access-queries.ts";

export interface CallerUser {
  id: string;
  email: string;
  name: string;
  platformAdmin: boolean;
}

export interface UserCaller {
  kind: "user";
  user: CallerUser;
  credential: {
    kind: "session" | "api_key";
    id: string;
    expiresAt: Date | null;
    /**
     * An organization API key's organization: the caller may reach that organization alone, with
     * their current role there (core/access.ts), and only its procedures (the auth interceptor).
     */
    organization?: { id: string; slug: string };
  };
}

export type Caller = { kind: "anonymous" } | UserCaller;

export const callerKey = createContextKey<Caller>({ kind: "anonymous" }, { description: "outpost caller" });

/**
 * In a call about one server (contract/services.ts serverScoped), the caller's access to that
 * server as the credential's statement read it when the call came (no row: no access). The call's
 * access check on that server receives it (core/access.ts) instead of reading it again. It is the
 * access as of the call's start, so only the call's first check may use it.
 */
export interface ServerScope {
  serverId: string;
  access: ServerAccessRow | undefined;
}

export const serverScopeKey = createContextKey<ServerScope | undefined>(undefined, { description: "outpost server scope" });

/** The call's {@link ServerScope}, when it is a call about one server. */
export function serverScope(ctx: HandlerContext): ServerScope | undefined {
  return ctx.values.get(serverScopeKey);
}

/** A game server's agent, authenticated by the server's agent key (agent services only). */
export interface AgentCaller {
  kind: "agent";
  server: { id: string; organizationId: string; organizationSlug: string; name: string; game: string };
  /** SHA-256 of the key the stream was opened with: a stream re-checks it while it lasts. */
  keyHash: string;
}

export const agentCallerKey = createContextKey<AgentCaller | undefined>(undefined, { description: "outpost agent caller" });

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

/** The agent of an agent service's call (the auth interceptor refuses calls without one). */
export function requireAgent(ctx: HandlerContext): AgentCaller {
  const agent = ctx.values.get(agentCallerKey);
  if (!agent) throw fail("unauthenticated", "send the server's agent key");
  return agent;
}
