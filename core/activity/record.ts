import type { EntityManager } from "@mikro-orm/postgresql";
import { ActivityEvent } from "../db/entities.ts";
import type { Caller } from "../context.ts";
import type { Query } from "../db/statements.ts";
import { randomUUID } from "node:crypto";
import { insertActivityEvent, type ActivityRow } from "./activity-queries.ts";
import { classifyAction, type ActivityAction } from "./kinds.ts";

export interface ActivityFacts {
  /** "<target>.<verb>", e.g. "server.created"; its kind and severity come from core/activity/kinds.ts. */
  action: ActivityAction;
  targetType: string;
  targetId: string;
  organizationId?: string | null;
  serverId?: string | null;
  details?: Record<string, string>;
}

type Actor = Caller | { kind: "account"; userId: string; email: string } | "system" | "agent";

/** Who an event names as its actor, as the activity_events columns hold it. */
function actorOf(actor: Actor) {
  if (actor === "system" || actor === "agent" || actor.kind === "anonymous") {
    return { actorKind: actor === "agent" ? "agent" : "system", actorUserId: null, actorEmail: null, actorApiKeyId: null };
  }
  if (actor.kind === "account") return { actorKind: "user", actorUserId: actor.userId, actorEmail: actor.email, actorApiKeyId: null };
  return {
    actorKind: "user",
    actorUserId: actor.user.id,
    actorEmail: actor.user.email,
    actorApiKeyId: actor.credential.kind === "api_key" ? actor.credential.id : null,
  };
}

/**
 * An event's columns, from who acted and the facts: its id is chosen here, so both ways of writing
 * know it. Its time is not: `created_at` is the database's clock when it writes the row (the
 * column's default), so events written by instances whose clocks differ keep the order in which
 * they were written, as the newest-first pages (core/page-cursor.ts) need.
 */
function eventColumns(actor: Actor, facts: ActivityFacts): ActivityRow {
  return {
    id: randomUUID(),
    ...actorOf(actor),
    ...classifyAction(facts.action),
    organizationId: facts.organizationId ?? null,
    action: facts.action,
    targetType: facts.targetType,
    targetId: facts.targetId,
    serverId: facts.serverId ?? null,
    details: facts.details ?? {},
  };
}

/*
 * These two functions are the only way events are written (the one funnel). The alerts' outbox
 * rows for an event are written by the `alert_match` trigger on activity_events (migration 0019,
 * core/alerts/): in the same transaction as the event whichever function wrote it, in one indexed
 * statement, without making `recordActivity` asynchronous for its many callers.
 */

/**
 * Adds an activity event to the unit of work, so it is written in the same transaction as the
 * change it describes (both or neither). `actor` is the caller, or a user id for actions taken on
 * an account's behalf before it has a caller (sign-up, sign-in), "system" for the operator, or
 * "agent" for a game server's agent (the event's server says which).
 */
export function recordActivity(em: EntityManager, actor: Actor, facts: ActivityFacts): void {
  em.create(ActivityEvent, eventColumns(actor, facts));
}

/**
 * Writes an activity event at once, in one statement: for an event that stands alone, about
 * something that changes nothing in the database (a console command sent to a game server).
 */
export async function appendActivity(query: Query, actor: Actor, facts: ActivityFacts): Promise<void> {
  await insertActivityEvent(query, eventColumns(actor, facts));
}
