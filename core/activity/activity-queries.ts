/** The activity log's plain SQL: one event written at once, outside any unit of work; its time is the database's (the column default). */
import type { Query } from "../db/statements.ts";

/** An event's columns, as record.ts derives them from the actor and the facts. */
export interface ActivityRow {
  id: string;
  organizationId: string | null;
  actorKind: string;
  actorUserId: string | null;
  actorEmail: string | null;
  actorApiKeyId: string | null;
  action: string;
  targetType: string;
  targetId: string;
  serverId: string | null;
  details: Record<string, string>;
  kind: string;
  severity: string;
}

export async function insertActivityEvent(query: Query, e: ActivityRow): Promise<void> {
  await query(
    `insert into activity_events (id, organization_id, actor_kind, actor_user_id, actor_email, actor_api_key_id, action, target_type, target_id, server_id, details, kind, severity)
     values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    [
      e.id, e.organizationId, e.actorKind, e.actorUserId, e.actorEmail, e.actorApiKeyId,
      e.action, e.targetType, e.targetId, e.serverId, JSON.stringify(e.details), e.kind, e.severity,
    ],
  );
}
