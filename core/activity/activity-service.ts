import type { ServiceImpl } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { FilterQuery } from "@mikro-orm/core";
import {
  ActivityEventSchema,
  ActivityService,
  ActorSchema,
  ListOrganizationActivityResponseSchema,
} from "../../gen/outpost/activity/v1/activity_service_pb.js";
import { ActivityEvent } from "../db/entities.ts";
import { entityManager, requireUser } from "../context.ts";
import { requireManager } from "../access.ts";
import { fail } from "../errors.ts";
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

export function createActivityService(): ServiceImpl<typeof ActivityService> {
  return {
    async listOrganizationActivity(req, ctx) {
      const em = entityManager(ctx);
      const access = await requireManager(em, requireUser(ctx), req.organizationSlug);
      const where: FilterQuery<ActivityEvent> = { organizationId: access.organization.id };
      if (req.serverId !== undefined) where.serverId = req.serverId;
      if (req.kind !== undefined) {
        where.action = req.kind.includes(".") ? req.kind : { $like: `${likeLiteral(req.kind)}.%` };
      }
      if (req.before !== undefined) {
        const cursor = await em.findOne(ActivityEvent, { id: req.before, organizationId: access.organization.id });
        if (!cursor) throw fail("invalid_argument", "before: no such event in this organization");
        where.$or = [
          { createdAt: { $lt: cursor.createdAt } },
          { createdAt: cursor.createdAt, id: { $lt: cursor.id } },
        ];
      }
      const events = await em.find(ActivityEvent, where, {
        orderBy: { createdAt: "desc", id: "desc" },
        limit: req.limit ?? defaultLimit,
      });
      return create(ListOrganizationActivityResponseSchema, { events: events.map(eventToProto) });
    },
  };
}
