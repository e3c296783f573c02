/** alerts/listAlertDeliveries: an organization's deliveries, newest first, a cursor to page. */
import type { ServiceImpl } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { AlertDeliveryStatus, AlertsService, ListAlertDeliveriesResponseSchema } from "../../gen/outpost/alerts/v1/alerts_service_pb.js";
import { entityManager, requireUser } from "../context.ts";
import type { CoreDeps } from "../deps.ts";
import { requireManager } from "../access.ts";
import { decodeCursor, pageOf } from "../page-cursor.ts";
import { listDeliveries, type DeliveryRow } from "./alert-queries.ts";

type Impl = ServiceImpl<typeof AlertsService>;

const statuses: Record<DeliveryRow["status"], AlertDeliveryStatus> = {
  pending: AlertDeliveryStatus.PENDING,
  delivered: AlertDeliveryStatus.DELIVERED,
  failed: AlertDeliveryStatus.FAILED,
  refused: AlertDeliveryStatus.REFUSED,
};
const stamp = (d: Date) => timestampFromDate(d);

export const listAlertDeliveries =
  (deps: Pick<CoreDeps, "statements">): Impl["listAlertDeliveries"] =>
  async (req, ctx) => {
    const em = entityManager(ctx);
    const access = await requireManager(em, requireUser(ctx), req.organizationSlug);
    const limit = req.limit ?? 50;
    const status = req.status === undefined ? undefined : (Object.keys(statuses) as Array<DeliveryRow["status"]>).find((s) => statuses[s] === req.status);
    const rows = await listDeliveries(deps.statements.on(em), {
      organizationId: access.organization.id,
      ruleId: req.ruleId,
      status,
      limit: limit + 1,
      after: req.cursor === undefined ? undefined : decodeCursor(req.cursor),
    });
    const { page, nextCursor } = pageOf(rows, limit);
    return create(ListAlertDeliveriesResponseSchema, {
      deliveries: page.map((row) => ({
        id: row.id,
        ruleId: row.rule_id,
        integrationId: row.integration_id ?? "",
        dashboard: row.integration_id === null,
        eventId: row.event_id,
        action: row.action,
        status: statuses[row.status],
        attempts: row.attempts,
        lastResponseStatus: row.last_status,
        lastError: row.last_error,
        nextAttemptAt: row.status === "pending" ? stamp(row.next_attempt_at) : undefined,
        deliveredAt: row.delivered_at ? stamp(row.delivered_at) : undefined,
        createdAt: stamp(row.created_at),
        summaryId: row.summary_id ?? "",
      })),
      nextCursor,
    });
  };
