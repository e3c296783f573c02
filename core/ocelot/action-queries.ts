/**
 * The gate's tool actions in SQL: one row per execution token (its SHA-256), written when it is
 * authorized and moved on by conditional updates, so a token is used once however many callers
 * present it at the same time.
 */
import type { Query } from "../db/statements.ts";

export type ActionStatus = "authorized" | "confirmed" | "completed" | "released" | "denied" | "expired" | "stopped";

export interface ActionRow {
  id: string;
  organization_id: string;
  user_id: string;
  tool: string;
  server_id: string | null;
  conversation_id: string;
  arguments_summary: string;
  weight: number;
  usage_day: string;
  requires_confirmation: boolean;
  status: ActionStatus;
  /** Whether `expires_at` has passed, by the database's clock. */
  expired: boolean;
}

/** How long an execution token lasts. */
export const tokenLifetimeSeconds = 300;

export interface NewAction {
  id: string;
  organizationId: string;
  userId: string;
  tool: string;
  serverId: string | null;
  conversationId: string;
  argumentsSummary: string;
  tokenHash: string;
  weight: number;
  usageDay: string;
  requiresConfirmation: boolean;
}

/** Writes an authorized action; its expiry. */
export async function insertAction(query: Query, a: NewAction): Promise<Date> {
  const [row] = await query<{ expires_at: Date }>(
    `insert into ocelot_tool_actions (id, organization_id, user_id, tool, server_id, conversation_id, arguments_summary, token_hash, weight, usage_day, requires_confirmation, expires_at, created_at)
     values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?::date, ?, now() + make_interval(secs => ?), now()) returning expires_at`,
    [a.id, a.organizationId, a.userId, a.tool, a.serverId, a.conversationId, a.argumentsSummary, a.tokenHash, a.weight, a.usageDay, a.requiresConfirmation, tokenLifetimeSeconds],
  );
  return new Date(row.expires_at);
}

/** The action of a token, its row locked until the transaction ends (concurrent uses wait and then see what the first did). */
export async function lockActionByToken(query: Query, tokenHash: string): Promise<ActionRow | undefined> {
  const [row] = await query<ActionRow>(
    `select id, organization_id, user_id, tool, server_id, conversation_id, arguments_summary, weight, usage_day::text as usage_day,
            requires_confirmation, status, expires_at <= now() as expired
       from ocelot_tool_actions where token_hash = ? for update`,
    [tokenHash],
  );
  return row;
}

/** Moves an open action to its final or next status; false if it was no longer in one of `from`. */
export async function moveAction(
  query: Query,
  id: string,
  from: readonly ActionStatus[],
  to: ActionStatus,
  result: { outcome?: string; summary?: string } = {},
): Promise<boolean> {
  const final = to !== "confirmed";
  const rows = await query(
    `update ocelot_tool_actions set status = ?, outcome = coalesce(?, outcome), result_summary = coalesce(?, result_summary),
            finished_at = case when ? then now() else finished_at end
      where id = ? and status = any(string_to_array(?, ',')) returning 1`,
    [to, result.outcome ?? null, result.summary ?? null, final, id, from.join(",")],
  );
  return rows.length === 1;
}

/**
 * Ends the organization's open actions whose tokens expired and gives their weight back: whoever
 * comes across them does this (every authorization, for its organization). The ended actions.
 */
export async function expireOpenActions(query: Query, organizationId: string): Promise<Array<Pick<ActionRow, "id" | "user_id" | "tool" | "server_id" | "conversation_id" | "weight" | "usage_day">>> {
  return query(
    `with ended as (
       update ocelot_tool_actions set status = 'expired', finished_at = now()
        where organization_id = ? and status in ('authorized', 'confirmed') and expires_at <= now()
        returning id, user_id, tool, server_id, conversation_id, weight, usage_day
     ), given_back as (
       update ocelot_daily_usage u set tool_actions = greatest(u.tool_actions - e.total, 0)
         from (select usage_day, sum(weight)::int as total from ended group by usage_day) e
        where u.organization_id = ? and u.day = e.usage_day
     )
     select id, user_id, tool, server_id, conversation_id, weight, usage_day::text as usage_day from ended`,
    [organizationId, organizationId],
  );
}
