import type { ServiceImpl } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { FilterQuery } from "@mikro-orm/core";
import type { EntityManager } from "@mikro-orm/postgresql";
import {
  ActivityEventSchema,
  ActivityService,
  ActorSchema,
  ListMyActivityResponseSchema,
  ListOrganizationActivityResponseSchema,
  ListPlatformActivityResponseSchema,
} from "../../gen/outpost/activity/v1/activity_service_pb.js";
import { ActivityEvent } from "../db/entities.ts";
import { entityManager, requireUser } from "../context.ts";
import { requireManager, requirePlatformAdmin } from "../access.ts";
import { fieldFail } from "../errors.ts";
import { likeLiteral } from "../sql.ts";

const defaultLimit = 50;

function eventToProto(event: ActivityEvent) {
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
  });
}

type Where = Record<string, unknown>;

interface Page {
  kind?: string;
  limit?: number;
  before?: string;
}

/**
 * One page of events matching `scope`, newest first: `kind` is an action ("server.created") or a
 * target ("server"); `before` is an event of the same scope, whose successors come next.
 */
async function listEvents(em: EntityManager, scope: Where, page: Page, extra: Where = {}) {
  const where: Where = { ...scope, ...extra };
  if (page.kind !== undefined) {
    where.action = page.kind.includes(".") ? page.kind : { $like: `${likeLiteral(page.kind)}.%` };
  }
  if (page.before !== undefined) {
    const cursor = await em.findOne(ActivityEvent, { ...scope, id: page.before } as FilterQuery<ActivityEvent>);
    if (!cursor) throw fieldFail([{ field: "before", message: "no such event in this log" }]);
    where.$or = [
      { createdAt: { $lt: cursor.createdAt } },
      { createdAt: cursor.createdAt, id: { $lt: cursor.id } },
    ];
  }
  const events = await em.find(ActivityEvent, where as FilterQuery<ActivityEvent>, {
    orderBy: { createdAt: "desc", id: "desc" },
    limit: page.limit ?? defaultLimit,
  });
  return events.map(eventToProto);
}

export function createActivityService(): ServiceImpl<typeof ActivityService> {
  return {
    async listOrganizationActivity(req, ctx) {
      const em = entityManager(ctx);
      const access = await requireManager(em, requireUser(ctx), req.organizationSlug);
      const events = await listEvents(em, { organizationId: access.organization.id }, req, req.serverId !== undefined ? { serverId: req.serverId } : {});
      return create(ListOrganizationActivityResponseSchema, { events });
    },

    async listMyActivity(req, ctx) {
      const em = entityManager(ctx);
      const caller = requireUser(ctx);
      const events = await listEvents(em, { actorUserId: caller.user.id }, req);
      return create(ListMyActivityResponseSchema, { events });
    },

    async listPlatformActivity(req, ctx) {
      const em = entityManager(ctx);
      requirePlatformAdmin(requireUser(ctx));
      const events = await listEvents(em, { organizationId: null }, req);
      return create(ListPlatformActivityResponseSchema, { events });
    },
  };
}
