/**
 * The tool-action gate: every action of the assistant passes here. `judgeToolAction` decides
 * (preflight, also served as OcelotService's dry run), `authorizeToolAction` decides and reserves
 * quota under a single-use execution token, and `applyTokenStep` (token-steps.ts) confirms,
 * completes or releases it. `recordAssistantQuery` counts a question against the day's cap.
 *
 * Only core calls the steps after judging: the chat router (core/chat/turn.ts), for a tool call
 * its model proposed in the caller's own conversation, which it then runs itself. So what the
 * activity events say (the conversation, the arguments, the result) is what core found, parsed
 * and ran, never a client's report; no procedure lets a client authorize or complete an action.
 *
 * Refusals are domain errors with the reasons `permission_denied`, `plan_limit_reached`,
 * `feature_disabled` and `emergency_stop`; an unknown organization, server or token is
 * `not_found`, a token used up or expired `failed_precondition`, a tool acting on a frozen
 * server's console `server_frozen` (core/servers/frozen.ts).
 */
import { randomUUID } from "node:crypto";
import { hashSecret, issueSecret } from "../../contract/secrets.ts";
import { fileAccessOf, filePathRefusal, planLimits, requireMember, judgeServerRow, type OrganizationAccess } from "../access.ts";
import type { UserCaller } from "../context.ts";
import type { Db } from "../db/sql.ts";
import type { CoreConfig, CoreDeps } from "../deps.ts";
import { DomainError, fail, type DomainErrorReason } from "../errors.ts";
import { isManager } from "../roles.ts";
import { recordActivity } from "../activity/record.ts";
import { expireBreakGlass, readConfig, reserveUsage, todaysUsage, type ConfigRow } from "./ocelot-queries.ts";
import { expireOpenActions, insertAction } from "./action-queries.ts";
import { targetsServer, tools, type ToolSpec } from "./tools.ts";
import { recordToolEvent } from "./tool-events.ts";

/** What the gate reads: the plans, and the service's clock that members' grants are read against. */
export type GateDeps = Pick<CoreDeps, "config" | "clock">;

/** The reasons a tool action or a question is refused. */
export type RefusalReason = Extract<DomainErrorReason, "permission_denied" | "plan_limit_reached" | "feature_disabled" | "emergency_stop">;

export interface ToolRequest {
  organizationSlug: string;
  tool: string;
  serverId?: string;
  /** A files tool's path, normalized (core/servers/file-methods.ts filePath); without it, the server alone is judged. */
  path?: string;
}

export interface Judgement {
  access: OrganizationAccess;
  spec: ToolSpec;
  config: ConfigRow;
  requiresConfirmation: boolean;
  /** Why not, if the action would be refused. */
  refusal?: DomainError;
}

/** The tool's spec; an unknown tool, or a server named or missing against the tool's kind, is invalid_argument. */
function toolSpec(req: ToolRequest): ToolSpec {
  const spec = tools.get(req.tool);
  if (!spec) throw fail("invalid_argument", `tool: unknown tool "${req.tool}" (known: ${[...tools.keys()].join(", ")})`);
  if (targetsServer(spec) && !req.serverId) throw fail("invalid_argument", `server_id: ${req.tool} acts on a server; name it`);
  if (!targetsServer(spec) && req.serverId) throw fail("invalid_argument", `server_id: ${req.tool} acts on no server`);
  return spec;
}

/** The emergency stop and the organization's switches, in that order; the refusal, if any. */
export function switchRefusal(config: ConfigRow, spec?: ToolSpec): DomainError | undefined {
  if (config.emergency_stop) return fail("emergency_stop", "an owner or admin pressed the assistant's emergency stop; nothing runs until they release it");
  if (!config.enabled) return fail("feature_disabled", "the assistant is turned off in this organization");
  if (spec && !config[spec.family]) return fail("feature_disabled", `the assistant's ${spec.family} tools are turned off in this organization`);
  return undefined;
}

/**
 * Whether the caller may do what the tool does: the server's access rule for tools on a server
 * (the one call of judgeServerRow the gate makes, naming the tool's server action) and, for a
 * files tool given a path, the file paths rule of the files procedures; their role for the
 * others. A server outside the organization is not_found; a frozen one refuses what its console
 * would (server_frozen, thrown as the console throws it), and allows only viewing.
 */
async function callerMay(
  db: Db,
  config: CoreConfig,
  caller: UserCaller,
  access: OrganizationAccess,
  spec: ToolSpec,
  req: ToolRequest,
  now: Date,
): Promise<DomainError | undefined> {
  if ("role" in spec.access) {
    return spec.access.role === "manager" && !isManager(access.role) ? fail("permission_denied", "only an owner or admin can use this tool") : undefined;
  }
  try {
    // Judging spends none of a grant's uses nor starts its duration: running the tool does, through the server's own path.
    const address = { serverId: req.serverId!, organizationId: access.organization.id };
    const judged = await judgeServerRow(db.query, caller, address, { action: spec.access.server, now, plans: config.plans });
    if ("path" in spec.access && req.path !== undefined) return filePathRefusal(fileAccessOf(judged), req.path, spec.access.path === "folder");
  } catch (error) {
    if (error instanceof DomainError && error.reason === "permission_denied") return error;
    throw error;
  }
  return undefined;
}

/** The most tool-action weight the organization may use today. */
function toolActionCap(config: CoreConfig, access: OrganizationAccess): number {
  return planLimits(config, access.organization.plan).assistantToolActionsPerDay;
}

const planRefusal = (cap: number, what: string) =>
  fail("plan_limit_reached", `the daily limit of ${cap} assistant ${what} is reached for this organization; it resets at midnight UTC`);

/**
 * Decides whether the caller may use the tool now, changing nothing: the emergency stop, the
 * switches, the caller's access, then (with `checkQuota`) today's remaining quota. Not a member:
 * not_found.
 */
export async function judgeToolAction(db: Db, deps: GateDeps, caller: UserCaller, req: ToolRequest, checkQuota = true): Promise<Judgement> {
  const access = await requireMember(db.em, caller, req.organizationSlug);
  return judgeWith(db, deps, caller, access, await readConfig(db.query, access.organization.id), req, checkQuota);
}

/**
 * {@link judgeToolAction} for a caller whose membership and organization's settings are read
 * already: for judging many tools at once (the tools a conversation is offered).
 */
export async function judgeWith(
  db: Db,
  deps: GateDeps,
  caller: UserCaller,
  access: OrganizationAccess,
  row: ConfigRow,
  req: ToolRequest,
  checkQuota = true,
): Promise<Judgement> {
  const { config } = deps;
  const spec = toolSpec(req);
  const requiresConfirmation = spec.confirm && !row.break_glass_active;
  const judged = { access, spec, config: row, requiresConfirmation };
  // Break-glass is read by the database's clock (in readConfig); grants are written and read by the service's (core/access.ts).
  const refusal = switchRefusal(row, spec) ?? (await callerMay(db, config, caller, access, spec, req, deps.clock.now()));
  if (refusal) return { ...judged, refusal };
  const cap = toolActionCap(config, access);
  if (checkQuota && (await todaysUsage(db.query, access.organization.id)).tool_actions + spec.weight > cap)
    return { ...judged, refusal: planRefusal(cap, "tool actions") };
  return judged;
}

export interface AuthorizeRequest extends ToolRequest {
  /** The caller's own conversation the call was proposed in, as the chat router found it. */
  conversationId: string;
  /** What the call does, as core parsed it from the model's proposal (the command verbatim); ≤ 1,000 characters. */
  argumentsSummary: string;
}

export interface Authorization {
  actionId: string;
  /** Shown once; only its hash is stored. */
  executionToken: string;
  expiresAt: Date;
  quotaWeight: number;
  requiresConfirmation: boolean;
}

/**
 * Within a transaction (`db` is its): judges the action, reserves its weight of today's quota in
 * one conditional update and writes the token, bound to the organization, the caller and the
 * tool. Tokens of the organization that expired are ended first and their quota given back.
 * Throws the refusal.
 */
export async function authorizeToolAction(db: Db, deps: GateDeps, caller: UserCaller, req: AuthorizeRequest): Promise<Authorization> {
  const { config } = deps;
  const judged = await judgeToolAction(db, deps, caller, req, false);
  if (judged.refusal) throw judged.refusal;
  const { access } = judged;
  await sweepOrganization(db, access.organization.id);
  const cap = toolActionCap(config, access);
  const day = await reserveUsage(db.query, access.organization.id, "tool_actions", judged.spec.weight, cap);
  if (!day) throw planRefusal(cap, "tool actions");
  const secret = issueSecret("ocelotExecutionToken");
  const actionId = randomUUID();
  const expiresAt = await insertAction(db.query, {
    id: actionId,
    organizationId: access.organization.id,
    userId: caller.user.id,
    tool: req.tool,
    serverId: req.serverId ?? null,
    conversationId: req.conversationId,
    argumentsSummary: req.argumentsSummary,
    tokenHash: secret.hash,
    weight: judged.spec.weight,
    usageDay: day,
    requiresConfirmation: judged.requiresConfirmation,
  });
  recordToolEvent(
    db.em,
    caller,
    "ocelot_tool.authorized",
    {
      id: actionId,
      organization_id: access.organization.id,
      tool: req.tool,
      server_id: req.serverId ?? null,
      conversation_id: req.conversationId,
      arguments_summary: req.argumentsSummary,
      weight: judged.spec.weight,
    },
    { requires_confirmation: String(judged.requiresConfirmation) },
  );
  return { actionId, executionToken: secret.value, expiresAt, quotaWeight: judged.spec.weight, requiresConfirmation: judged.requiresConfirmation };
}

/** Ends the organization's expired tokens (their quota back) and a break-glass whose time is up, each an activity event. */
export async function sweepOrganization(db: Db, organizationId: string): Promise<void> {
  for (const ended of await expireOpenActions(db.query, organizationId)) {
    recordToolEvent(db.em, "system", "ocelot_tool.expired", { ...ended, organization_id: organizationId, arguments_summary: "" });
  }
  if (await expireBreakGlass(db.query, organizationId)) {
    recordActivity(db.em, "system", { action: "ocelot.break_glass_expired", targetType: "ocelot_config", targetId: organizationId, organizationId });
  }
}

/**
 * Counts one question to the assistant against today's cap: the smaller of the plan's
 * `assistantQueriesPerDay` and the organization's own cap. Within the caller's transaction, for
 * the member `access` says; refuses with emergency_stop, feature_disabled or plan_limit_reached.
 * For the chat router.
 */
export async function recordAssistantQuery(db: Db, config: CoreConfig, access: OrganizationAccess): Promise<{ day: string }> {
  const row = await readConfig(db.query, access.organization.id);
  const refusal = switchRefusal(row);
  if (refusal) throw refusal;
  const cap = queryCap(config, access, row);
  const day = await reserveUsage(db.query, access.organization.id, "queries", 1, cap);
  if (!day) throw planRefusal(cap, "questions");
  return { day };
}

/** Questions allowed per day: the plan's limit, or the organization's own cap when smaller. */
export function queryCap(config: CoreConfig, access: OrganizationAccess, row: ConfigRow): number {
  const plan = planLimits(config, access.organization.plan).assistantQueriesPerDay;
  return row.daily_query_cap > 0 ? Math.min(row.daily_query_cap, plan) : plan;
}

/** The hash a presented token is looked up by. */
export function tokenHash(token: string): string {
  return hashSecret(token);
}
