/** The activity log's plain SQL: one event written at once, outside any unit of work; its time is the database's (the column default). */
import { sql, type SqlRunner } from "../db/sql.ts";

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

/**
 * Writes events in one statement, in the order given (each row's `created_at` is the database's
 * clock as the row is written). The rows travel as one JSON array, so one statement text serves any
 * number of them, on PostgreSQL and the embedded database alike.
 */
export async function insertActivityEvents(query: SqlRunner, events: readonly ActivityRow[]): Promise<void> {
  const rows = events.map((e) => ({
    id: e.id,
    organization_id: e.organizationId,
    actor_kind: e.actorKind,
    actor_user_id: e.actorUserId,
    actor_email: e.actorEmail,
    actor_api_key_id: e.actorApiKeyId,
    action: e.action,
    target_type: e.targetType,
    target_id: e.targetId,
    server_id: e.serverId,
    details: e.details,
    kind: e.kind,
    severity: e.severity,
  }));
  await query.run(
    sql`insert into activity_events (id, organization_id, actor_kind, actor_user_id, actor_email, actor_api_key_id, action, target_type, target_id, server_id, details, kind, severity)
        select r.id, r.organization_id, r.actor_kind, r.actor_user_id, r.actor_email, r.actor_api_key_id, r.action, r.target_type, r.target_id, r.server_id, r.details, r.kind, r.severity
        from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as r(id uuid, organization_id uuid, actor_kind text, actor_user_id uuid, actor_email text, actor_api_key_id uuid, action text, target_type text, target_id text, server_id uuid, details jsonb, kind text, severity text)`,
  );
}
