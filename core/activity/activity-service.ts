import type { ServiceImpl } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import {
  AcknowledgeOrganizationActivityEventResponseSchema,
  ActivityService,
  ListMyActivityResponseSchema,
  ListOrganizationActivityResponseSchema,
  ListPlatformActivityResponseSchema,
} from "../../gen/outpost/activity/v1/activity_service_pb.js";
import { LockMode } from "@mikro-orm/core";
import { ActivityEvent } from "../db/entities.ts";
import type { CoreDeps } from "../deps.ts";
import { entityManager, requireUser } from "../context.ts";
import { requireManager, requirePlatformAdmin } from "../access.ts";
import { fail } from "../errors.ts";
import { eventToProto, listEvents } from "./activity-page.ts";

type Impl = ServiceImpl<typeof ActivityService>;

const listOrganizationActivity: Impl["listOrganizationActivity"] = async (req, ctx) => {
  const em = entityManager(ctx);
  const access = await requireManager(em, requireUser(ctx), req.organizationSlug);
  const scope = { organizationId: access.organization.id, ...(req.serverId !== undefined && { serverId: req.serverId }) };
  return create(ListOrganizationActivityResponseSchema, await listEvents(em, scope, req));
};

const listMyActivity: Impl["listMyActivity"] = async (req, ctx) => {
  const em = entityManager(ctx);
  const caller = requireUser(ctx);
  return create(ListMyActivityResponseSchema, await listEvents(em, { actorUserId: caller.user.id }, req));
};

const listPlatformActivity: Impl["listPlatformActivity"] = async (req, ctx) => {
  const em = entityManager(ctx);
  requirePlatformAdmin(requireUser(ctx));
  return create(ListPlatformActivityResponseSchema, await listEvents(em, { organizationId: null }, req));
};

/**
 * Owners and admins acknowledge an event of their organization: the first acknowledgement is
 * kept (who, when), later ones change nothing and return the event as it is. The event is locked
 * while it is read, so two acknowledging at once keep one of them. Another organization's event
 * (or none) is not_found.
 */
const acknowledgeOrganizationActivityEvent =
  ({ clock }: Pick<CoreDeps, "clock">): Impl["acknowledgeOrganizationActivityEvent"] =>
  async (req, ctx) => {
    const caller = requireUser(ctx);
    const em = entityManager(ctx);
    const access = await requireManager(em, caller, req.organizationSlug);
    const event = await em.transactional(async (tx) => {
      const found = await tx.findOne(ActivityEvent, { id: req.eventId, organizationId: access.organization.id }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
      if (!found) throw fail("not_found", "no such event in this organization's activity log");
      if (!found.acknowledgedAt) {
        found.acknowledgedAt = clock.now();
        found.acknowledgedByUserId = caller.user.id;
        found.acknowledgedByEmail = caller.user.email;
      }
      return found;
    });
    return create(AcknowledgeOrganizationActivityEventResponseSchema, { event: eventToProto(event) });
  };

export function createActivityService(deps: Pick<CoreDeps, "clock">): ServiceImpl<typeof ActivityService> {
  return { listOrganizationActivity, listMyActivity, listPlatformActivity, acknowledgeOrganizationActivityEvent: acknowledgeOrganizationActivityEvent(deps) };
}
