/** The gate's activity events: one per step of a tool action, naming its tool, server and conversation. */
import type { EntityManager } from "@mikro-orm/postgresql";
import type { UserCaller } from "../context.ts";
import { recordActivity } from "../activity/record.ts";
import type { ActivityAction } from "../activity/kinds.ts";
import type { ActionRow } from "./action-queries.ts";

type ToolAction = Extract<ActivityAction, `ocelot_tool.${string}`>;

/**
 * Adds the event to the transaction's unit of work. Details: the tool, the conversation it
 * belongs to, its arguments' summary, its quota weight, and what the step adds (an outcome).
 */
export function recordToolEvent(
  em: EntityManager,
  actor: UserCaller | "system",
  action: ToolAction,
  row: Pick<ActionRow, "id" | "organization_id" | "tool" | "server_id" | "conversation_id" | "arguments_summary" | "weight">,
  extra: Record<string, string> = {},
): void {
  recordActivity(em, actor, {
    action,
    targetType: "ocelot_tool_action",
    targetId: row.id,
    organizationId: row.organization_id,
    serverId: row.server_id,
    details: {
      tool: row.tool,
      conversation_id: row.conversation_id,
      ...(row.arguments_summary ? { arguments: row.arguments_summary } : {}),
      weight: String(row.weight),
      ...extra,
    },
  });
}
