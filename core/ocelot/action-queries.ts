/**
 * The gate's tool actions in SQL: one row per execution token (its SHA-256), written when it is
 * authorized and moved on by conditional updates, so a token is used once however many callers
 * present it at the same time.
 */
import { sql, type SqlRunner } from "../db/sql.ts";
import { bool, int, nullable, oneOf, row, text, timestamp, type Row } from "../db/rows.ts";

const actionStatuses = ["authorized", "confirmed", "completed", "released", "denied", "expired", "stopped"] as const;
export type ActionStatus = (typeof actionStatuses)[number];

/** The columns an action ended by {@link expireOpenActions} is read with; an action's row has them and more. */
const endedFields = {
  id: text,
  user_id: text,
  tool: text,
  server_id: nullable(text),
  conversation_id: text,
  weight: int,
  usage_day: text,
};
const endedRow = row(endedFields);

const actionRow = row({
  ...endedFields,
  organization_id: text,
  arguments_summary: text,
  requires_confirmation: bool,
  status: oneOf(...actionStatuses),
  /** Whether `expires_at` has passed, by the database's clock. */
  expired: bool,
});
export type ActionRow = Row<typeof actionRow>;

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

const expiresRow = row({ expires_at: timestamp });

/** Writes an authorized action; its expiry. */
export async function insertAction(query: SqlRunner, a: NewAction): Promise<Date> {
  const [inserted] = await query.rows(
    sql`insert into ocelot_tool_actions (id, organization_id, user_id, tool, server_id, conversation_id, arguments_summary, token_hash, weight, usage_day, requires_confirmation, expires_at, created_at)
        values (${a.id}, ${a.organizationId}, ${a.userId}, ${a.tool}, ${a.serverId}, ${a.conversationId}, ${a.argumentsSummary}, ${a.tokenHash}, ${a.weight}, ${a.usageDay}::date,
                ${a.requiresConfirmation}, now() + make_interval(secs => ${tokenLifetimeSeconds}), now()) returning expires_at`,
    expiresRow,
  );
  return inserted.expires_at;
}

/** The action of a token, its row locked until the transaction ends (concurrent uses wait and then see what the first did). */
export function lockActionByToken(query: SqlRunner, tokenHash: string): Promise<ActionRow | undefined> {
  return query.one(
    sql`select id, organization_id, user_id, tool, server_id, conversation_id, arguments_summary, weight, usage_day::text as usage_day,
               requires_confirmation, status, expires_at <= now() as expired
          from ocelot_tool_actions where token_hash = ${tokenHash} for update`,
    actionRow,
  );
}

/** Moves an open action to its final or next status; false if it was no longer in one of `from`. */
export async function moveAction(
  query: SqlRunner,
  id: string,
  from: readonly ActionStatus[],
  to: ActionStatus,
  result: { outcome?: string; summary?: string } = {},
): Promise<boolean> {
  const final = to !== "confirmed";
  const moved = await query.run(
    sql`update ocelot_tool_actions set status = ${to}, outcome = coalesce(${result.outcome ?? null}, outcome), result_summary = coalesce(${result.summary ?? null}, result_summary),
               finished_at = case when ${final}::boolean then now() else finished_at end
         where id = ${id} and status = any(${from}::text[])`,
  );
  return moved === 1;
}

/**
 * Ends the organization's open actions whose tokens expired and gives their weight back: whoever
 * comes across them does this (every authorization, for its organization). The ended actions.
 */
export function expireOpenActions(query: SqlRunner, organizationId: string): Promise<Array<Row<typeof endedRow>>> {
  return query.rows(
    sql`with ended as (
          update ocelot_tool_actions set status = 'expired', finished_at = now()
           where organization_id = ${organizationId} and status in ('authorized', 'confirmed') and expires_at <= now()
           returning id, user_id, tool, server_id, conversation_id, weight, usage_day
        ), given_back as (
          update ocelot_daily_usage u set tool_actions = greatest(u.tool_actions - e.total, 0)
            from (select usage_day, sum(weight)::int as total from ended group by usage_day) e
           where u.organization_id = ${organizationId} and u.day = e.usage_day
        )
        select id, user_id, tool, server_id, conversation_id, weight, usage_day::text as usage_day from ended`,
    endedRow,
  );
}
