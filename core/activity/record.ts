import type { EntityManager } from "@mikro-orm/postgresql";
import { ActivityEvent } from "../db/entities.ts";
import type { Caller } from "../context.ts";

export interface ActivityFacts {
  /** "<target>.<verb>", e.g. "server.created". */
  action: string;
  targetType: string;
  targetId: string;
  organizationId?: string | null;
  serverId?: string | null;
  details?: Record<string, string>;
}

/**
 * Adds an activity event to the unit of work, so it is written in the same transaction as the
 * change it describes (both or neither). `actor` is the caller, or a user id for actions taken on
 * an account's behalf before it has a caller (sign-up, sign-in), "system" for the operator, or
 * "agent" for a game server's agent (the event's server says which).
 */
export function recordActivity(
  em: EntityManager,
  actor: Caller | { kind: "account"; userId: string; email: string } | "system" | "agent",
  facts: ActivityFacts,
): void {
  const who =
    actor === "system" || actor === "agent" || actor.kind === "anonymous"
      ? { actorKind: actor === "agent" ? "agent" : "system", actorUserId: null, actorEmail: null, actorApiKeyId: null }
      : actor.kind === "account"
        ? { actorKind: "user", actorUserId: actor.userId, actorEmail: actor.email, actorApiKeyId: null }
        : {
            actorKind: "user",
            actorUserId: actor.user.id,
            actorEmail: actor.user.email,
            actorApiKeyId: actor.credential.kind === "api_key" ? actor.credential.id : null,
          };
  em.create(ActivityEvent, {
    ...who,
    organizationId: facts.organizationId ?? null,
    action: facts.action,
    targetType: facts.targetType,
    targetId: facts.targetId,
    serverId: facts.serverId ?? null,
    details: facts.details ?? {},
  });
}
