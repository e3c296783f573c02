/**
 * The steps after authorization: a person confirms or denies, the caller completes or releases.
 * Each presents the execution token; its row is locked for the step, so two steps at once are
 * one after the other and a used token is refused the second time. A token found expired, or
 * presented while the emergency stop is on, is ended (its quota given back) in a transaction of
 * its own, and then refused; so is an action a person allows after the assistant, or the
 * action's family, was switched off.
 */
import type { EntityManager } from "@mikro-orm/postgresql";
import type { UserCaller } from "../context.ts";
import type { SqlRunner, Statements } from "../db/sql.ts";
import { requireMember } from "../access.ts";
import { fail, type DomainError } from "../errors.ts";
import { lockActionByToken, moveAction, type ActionRow, type ActionStatus } from "./action-queries.ts";
import { readConfig, releaseUsage } from "./ocelot-queries.ts";
import { switchRefusal, tokenHash } from "./gate.ts";
import { tools } from "./tools.ts";
import { recordToolEvent } from "./tool-events.ts";

export type TokenStep =
  | { kind: "confirm"; allow: boolean }
  /** `resultSummary`: what the run came to, as core ran the tool (the result stored for the model), ≤ 1,000 characters. */
  | { kind: "complete"; tool: string; succeeded: boolean; resultSummary: string }
  | { kind: "release"; tool: string };

export interface TokenRequest {
  organizationSlug: string;
  executionToken: string;
}

const open: readonly ActionStatus[] = ["authorized", "confirmed"];

/**
 * Applies the step to the token's action, in a transaction of its own. Refused: another
 * organization's or an unknown token (not_found); another caller's, or another tool's
 * (permission_denied: only the person who asked confirms, as only they see their conversation);
 * used, expired, or not yet confirmed (failed_precondition); the emergency stop (emergency_stop).
 */
export async function applyTokenStep(em: EntityManager, statements: Statements, caller: UserCaller, req: TokenRequest, step: TokenStep): Promise<void> {
  const refusal = await em.transactional(async (tx): Promise<DomainError | undefined> => {
    const db = statements.db(tx);
    const access = await requireMember(tx, caller, req.organizationSlug);
    const row = await lockActionByToken(db.query, tokenHash(req.executionToken));
    if (!row || row.organization_id !== access.organization.id) throw fail("not_found", "unknown execution token");
    if (row.user_id !== caller.user.id) throw fail("permission_denied", "the execution token was issued to another caller");
    if (step.kind !== "confirm" && row.tool !== step.tool) throw fail("permission_denied", `the execution token was issued for ${row.tool}, not ${step.tool}`);
    if (!open.includes(row.status)) throw fail("failed_precondition", `the execution token was already used (the action is ${row.status})`);
    const end = async (
      status: ActionStatus,
      action: "ocelot_tool.expired" | "ocelot_tool.stopped" | "ocelot_tool.denied" | "ocelot_tool.released",
      actor: UserCaller | "system",
    ) => {
      await moveAction(db.query, row.id, open, status);
      await releaseUsage(db.query, row.organization_id, row.usage_day, "tool_actions", row.weight);
      recordToolEvent(tx, actor, action, row);
      await tx.flush();
    };
    if (row.expired) {
      await end("expired", "ocelot_tool.expired", "system");
      return fail("failed_precondition", "the execution token expired; authorize the action again");
    }
    const config = step.kind === "release" ? undefined : await readConfig(db.query, row.organization_id);
    if (config?.emergency_stop) {
      await end("stopped", "ocelot_tool.stopped", caller);
      return fail("emergency_stop", "an owner or admin pressed the assistant's emergency stop; the action was cancelled");
    }
    // A person allowing an action is the moment it is decided: the switches as they are now.
    const off = config && step.kind === "confirm" && step.allow ? switchRefusal(config, tools.get(row.tool)) : undefined;
    if (off) {
      await end("released", "ocelot_tool.released", caller);
      return fail(off.reason, `${off.message}; the action was cancelled`);
    }
    await settle(tx, db.query, caller, row, step, end);
    return undefined;
  });
  if (refusal) throw refusal;
}

async function settle(
  tx: EntityManager,
  query: SqlRunner,
  caller: UserCaller,
  row: ActionRow,
  step: TokenStep,
  end: (status: ActionStatus, action: "ocelot_tool.denied" | "ocelot_tool.released", actor: UserCaller) => Promise<void>,
): Promise<void> {
  switch (step.kind) {
    case "confirm":
      if (!row.requires_confirmation) throw fail("failed_precondition", "this action needs no confirmation");
      if (row.status === "confirmed") throw fail("failed_precondition", "this action is already confirmed");
      if (!step.allow) return end("denied", "ocelot_tool.denied", caller);
      await moveAction(query, row.id, ["authorized"], "confirmed");
      recordToolEvent(tx, caller, "ocelot_tool.confirmed", row);
      return tx.flush();
    case "complete": {
      if (row.requires_confirmation && row.status !== "confirmed") throw fail("failed_precondition", "a person must confirm this action first (confirmToolAction)");
      const outcome = step.succeeded ? "succeeded" : "failed";
      await moveAction(query, row.id, open, "completed", { outcome, summary: step.resultSummary });
      recordToolEvent(tx, caller, step.succeeded ? "ocelot_tool.completed" : "ocelot_tool.failed", row, step.resultSummary ? { result: step.resultSummary } : {});
      return tx.flush();
    }
    case "release":
      return end("released", "ocelot_tool.released", caller);
  }
}
