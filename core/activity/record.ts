import type { EntityManager } from "@mikro-orm/postgresql";
import { ActivityEvent } from "../db/entities.ts";
import type { Caller } from "../context.ts";
import type { SqlRunner } from "../db/sql.ts";
import { randomUUID } from "node:crypto";
import { createGatherer, stalledAfterMs } from "../gather.ts";
import { insertActivityEvents, type ActivityRow } from "./activity-queries.ts";
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
    // A lone UTF-16 surrogate (a caller's text can carry one) is no valid JSON for the database:
    // it would fail the event, so it is written as U+FFFD instead.
    details: Object.fromEntries(Object.entries(facts.details ?? {}).map(([name, value]) => [name, value.toWellFormed()])),
  };
}

/*
 * These two functions, and the writer below that serves appendActivity's purpose for many callers
 * at once, are the only way events are written (the one funnel). The alerts' outbox
 * rows for an event are written by the `alert_match` trigger on activity_events (migrations 0019
 * and 0028, core/alerts/): in the same transaction as the event whichever function wrote it, in one
 * indexed statement per statement that wrote events, without making `recordActivity` asynchronous
 * for its many callers.
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
export async function appendActivity(query: SqlRunner, actor: Actor, facts: ActivityFacts): Promise<void> {
  await insertActivityEvents(query, [eventColumns(actor, facts)]);
}

/** appendActivity for callers outside any transaction, written together (see createActivityWriter). */
export interface ActivityWriter {
  /** Resolves once the event is written; rejects when it could not be. */
  append(actor: Actor, facts: ActivityFacts): Promise<void>;
  /** Settles once every event appended so far is written or has failed (before the database closes). */
  flush(): Promise<void>;
}

/**
 * Stand-alone events from many callers at once (console commands, refusals anyone can cause),
 * gathered (core/gather.ts): while one insert is on its way, the events that arrive meanwhile wait
 * for it and then go in the next, one statement and one commit for all of them, up to `maxBatch`.
 * While the log is busy (an insert ended less than `busyWithinMs` ago), a batch short of
 * `maxBatch` also waits `gatherMs` for the events of that moment: under a stream of console
 * commands (bench:console) each insert then carried about 6 events instead of 4.4, and the
 * database's and this process's work per command fell by more than the wait added. An event that
 * finds the log quiet goes at once, alone, so nothing waits then. Each caller still answers only
 * once its own event is written. If a batch fails, its events are tried one by one, so one bad
 * event fails only its own caller. `query` must be outside any transaction (the pool's).
 */
export function createActivityWriter(query: SqlRunner, maxBatch = 100, { gatherMs = 1, busyWithinMs = 2 } = {}): ActivityWriter {
  /** Each event's failure, or undefined once it is written. */
  const write = async (rows: ActivityRow[]): Promise<unknown[]> => {
    try {
      await insertActivityEvents(query, rows);
      return rows.map(() => undefined);
    } catch (error) {
      if (rows.length === 1) return [error ?? new Error("the activity event was not written")];
      const failures: unknown[] = [];
      for (const row of rows) failures.push(...(await write([row])));
      return failures;
    }
  };
  // One hung connection must not stop every caller's event, only its own batch's.
  const events = createGatherer(write, { maxBatch, gatherMs, busyWithinMs, stallMs: stalledAfterMs });
  return {
    async append(actor, facts) {
      const failure = await events.submit(eventColumns(actor, facts));
      if (failure !== undefined) throw failure;
    },
    flush: () => events.flush(),
  };
}
