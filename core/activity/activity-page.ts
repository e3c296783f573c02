/**
 * One page of an activity log as the API shows it: the filters every log shares (action or
 * target, kinds, severities), the keyset cursor (or the older `before` event id), and each event
 * as its proto message.
 */
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { FilterQuery } from "@mikro-orm/core";
import type { EntityManager } from "@mikro-orm/postgresql";
import { AcknowledgementSchema, ActivityEventSchema, ActivityKind, ActivitySeverity, ActorSchema } from "../../gen/outpost/activity/v1/activity_service_pb.js";
import { ActivityEvent } from "../db/entities.ts";
import { fieldFail } from "../errors.ts";
import { likeLiteral } from "../sql.ts";
import { decodeCursor, encodeCursor, type PageCursor } from "../page-cursor.ts";

const defaultLimit = 50;

/** A stored kind or severity ("player_admin") as its enum value; UNSPECIFIED for one the enum lacks. */
const enumOf = <E extends Record<string, string | number>>(e: E, name: string): number => {
  const value = e[name.toUpperCase() as keyof E];
  return typeof value === "number" ? value : 0;
};
/** An enum value as its stored name. */
const nameOf = (e: Record<number, string>, value: number) => e[value].toLowerCase();

export function eventToProto(event: ActivityEvent) {
  return create(ActivityEventSchema, {
    id: event.id,
    organizationId: event.organizationId ?? "",
    action: event.action,
    actor: create(ActorSchema, {
      kind: event.actorKind,
      userId: event.actorUserId ?? "",
      email: event.actorEmail ?? "",
      apiKeyId: event.actorApiKeyId ?? "",
    }),
    targetType: event.targetType,
    targetId: event.targetId,
    serverId: event.serverId ?? "",
    details: event.details,
    createdAt: timestampFromDate(event.createdAt),
    kind: enumOf(ActivityKind, event.kind),
    severity: enumOf(ActivitySeverity, event.severity),
    acknowledgement: event.acknowledgedAt
      ? create(AcknowledgementSchema, {
          userId: event.acknowledgedByUserId ?? "",
          email: event.acknowledgedByEmail ?? "",
          acknowledgedAt: timestampFromDate(event.acknowledgedAt),
        })
      : undefined,
  });
}

type Where = Record<string, unknown>;

/** What a request may ask of a page; the organization log adds its server filter to the scope. */
export interface PageRequest {
  action?: string;
  kind?: readonly ActivityKind[];
  severity?: readonly ActivitySeverity[];
  limit?: number;
  before?: string;
  cursor?: string;
}

/** Where the page starts: after the cursor's event, or after the `before` event of the same log. */
async function startAfter(em: EntityManager, scope: Where, page: PageRequest): Promise<PageCursor | undefined> {
  if (page.cursor !== undefined && page.before !== undefined) {
    throw fieldFail([{ field: "before", message: "give either cursor or before, not both" }]);
  }
  if (page.cursor !== undefined) return decodeCursor(page.cursor);
  if (page.before === undefined) return undefined;
  const event = await em.findOne(ActivityEvent, { ...scope, id: page.before } as FilterQuery<ActivityEvent>);
  if (!event) throw fieldFail([{ field: "before", message: "no such event in this log" }]);
  return event;
}

/**
 * One page of the events in `scope` matching the request, newest first, and the cursor of the
 * next one (empty when this page is the last). `action` is an action ("server.created") or a
 * target ("server").
 */
export async function listEvents(em: EntityManager, scope: Where, page: PageRequest) {
  const where: Where = { ...scope };
  if (page.action !== undefined) {
    where.action = page.action.includes(".") ? page.action : { $like: `${likeLiteral(page.action)}.%` };
  }
  if (page.kind?.length) where.kind = { $in: page.kind.map((k) => nameOf(ActivityKind, k)) };
  if (page.severity?.length) where.severity = { $in: page.severity.map((s) => nameOf(ActivitySeverity, s)) };
  const after = await startAfter(em, scope, page);
  if (after) {
    where.$or = [{ createdAt: { $lt: after.createdAt } }, { createdAt: after.createdAt, id: { $lt: after.id } }];
  }
  const limit = page.limit ?? defaultLimit;
  // One more than asked, to know whether a next page exists.
  const found = await em.find(ActivityEvent, where as FilterQuery<ActivityEvent>, { orderBy: { createdAt: "desc", id: "desc" }, limit: limit + 1 });
  const events = found.slice(0, limit);
  const nextCursor = found.length > limit ? encodeCursor(events.at(-1)!) : "";
  return { events: events.map(eventToProto), nextCursor };
}
