/**
 * OcelotService: the assistant's settings, today's usage and the gate's dry run over Connect.
 * Owners and admins change the settings; any member reads them and asks whether a tool would be
 * allowed (gate.ts decides). The gate's other steps are not served: only core runs a tool, so only
 * core may reserve quota for it and record what it did (the chat router, core/chat/turn.ts). Every
 * change is an activity event in the change's transaction.
 */
import type { ServiceImpl } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import { OcelotService } from "../../gen/outpost/ocelot/v1/ocelot_service_pb.js";
import { ToolRefusal, UsageStatsSchema, type OcelotSettings } from "../../gen/outpost/ocelot/v1/resources_pb.js";
import { entityManager, requireUser, type UserCaller } from "../context.ts";
import type { CoreDeps } from "../deps.ts";
import { fail, fieldFail } from "../errors.ts";
import { planLimits, requireManager, requireMember } from "../access.ts";
import { recordActivity } from "../activity/record.ts";
import type { Db } from "../db/sql.ts";
import { configToProto, settingsColumns } from "./config-fields.ts";
import { ensureConfigRow, readConfig, setBreakGlass, setEmergencyStop, todaysUsage, writeSettings } from "./ocelot-queries.ts";
import { judgeToolAction, queryCap, sweepOrganization, type RefusalReason } from "./gate.ts";
import { countNotes } from "../knowledge/note-queries.ts";

type Impl = ServiceImpl<typeof OcelotService>;

/** How long break-glass stays on when the request does not say. */
export const defaultBreakGlassMinutes = 60;

const refusals: Record<RefusalReason, ToolRefusal> = {
  permission_denied: ToolRefusal.PERMISSION_DENIED,
  plan_limit_reached: ToolRefusal.PLAN_LIMIT_REACHED,
  feature_disabled: ToolRefusal.FEATURE_DISABLED,
  emergency_stop: ToolRefusal.EMERGENCY_STOP,
};

/** Turns the emergency stop on or off (the row exists and is locked); records the change. */
async function switchEmergencyStop(db: Db, caller: UserCaller, organizationId: string, on: boolean): Promise<void> {
  if (await setEmergencyStop(db.query, organizationId, on, caller.user.id)) {
    recordActivity(db.em, caller, {
      action: on ? "ocelot.emergency_stop_on" : "ocelot.emergency_stop_off",
      targetType: "ocelot_config",
      targetId: organizationId,
      organizationId,
    });
  }
}

/** Turns break-glass on for `minutes` or off; records it when it changed (the database's clock decides, setBreakGlass's condition). */
async function switchBreakGlass(db: Db, caller: UserCaller, organizationId: string, on: boolean, minutes: number): Promise<void> {
  if (await setBreakGlass(db.query, organizationId, on, minutes, caller.user.id)) {
    recordActivity(db.em, caller, {
      action: on ? "ocelot.break_glass_on" : "ocelot.break_glass_off",
      targetType: "ocelot_config",
      targetId: organizationId,
      organizationId,
      details: on ? { minutes: String(minutes) } : {},
    });
  }
}

/**
 * Writes the settings a manager sent over the version they read (the row is locked), within the
 * plan's daily question cap; records the change.
 */
async function writeSettingsOf(
  db: Db,
  caller: UserCaller,
  config: CoreDeps["config"],
  organization: { id: string; plan: string },
  version: number,
  settings: OcelotSettings,
) {
  const columns = settingsColumns(settings);
  const planCap = planLimits(config, organization.plan).assistantQueriesPerDay;
  if (columns.daily_query_cap > planCap) {
    throw fieldFail([{ field: "settings.daily_query_cap", message: `the ${organization.plan} plan allows at most ${planCap} questions per day` }]);
  }
  if (!(await writeSettings(db.query, organization.id, version, columns))) {
    throw fail("version_conflict", "the assistant's settings changed meanwhile; read them again");
  }
  recordActivity(db.em, caller, {
    action: "ocelot.config_updated",
    targetType: "ocelot_config",
    targetId: organization.id,
    organizationId: organization.id,
    details: { enabled: String(columns.enabled), daily_query_cap: String(columns.daily_query_cap), response_style: columns.response_style },
  });
}

export function createOcelotService(deps: CoreDeps): Impl {
  const { config, statements } = deps;

  /** Within a transaction: the caller must manage the organization; its row exists, locked, its expired switches and tokens ended. */
  async function lockForChange(db: Db, caller: UserCaller, slug: string) {
    const access = await requireManager(db.em, caller, slug);
    await ensureConfigRow(db.query, access.organization.id);
    const row = await readConfig(db.query, access.organization.id, true);
    await sweepOrganization(db, access.organization.id);
    return { access, row };
  }

  return {
    async getOcelotConfig(req, ctx) {
      const em = entityManager(ctx);
      const access = await requireMember(em, requireUser(ctx), req.organizationSlug);
      const row = await readConfig(statements.on(em), access.organization.id);
      return { config: configToProto(row, access.role) };
    },

    async updateOcelotConfig(req, ctx) {
      const caller = requireUser(ctx);
      return entityManager(ctx).transactional(async (tx) => {
        const db = statements.db(tx);
        const { access, row } = await lockForChange(db, caller, req.organizationSlug);
        const organizationId = access.organization.id;
        if (row.version !== req.version)
          throw fail("version_conflict", `the assistant's settings changed since you read them (version ${req.version}, now ${row.version}); read them again`);
        await writeSettingsOf(db, caller, config, access.organization, (await readConfig(db.query, organizationId)).version, req.settings!);
        if (req.emergencyStop !== undefined) await switchEmergencyStop(db, caller, organizationId, req.emergencyStop);
        if (req.breakGlass !== undefined) await switchBreakGlass(db, caller, organizationId, req.breakGlass, req.breakGlassMinutes || defaultBreakGlassMinutes);
        await tx.flush();
        return { config: configToProto(await readConfig(db.query, organizationId), access.role) };
      });
    },

    async setOcelotEmergencyStop(req, ctx) {
      const caller = requireUser(ctx);
      return entityManager(ctx).transactional(async (tx) => {
        const db = statements.db(tx);
        const { access } = await lockForChange(db, caller, req.organizationSlug);
        await switchEmergencyStop(db, caller, access.organization.id, req.on);
        await tx.flush();
        return { config: configToProto(await readConfig(db.query, access.organization.id), access.role) };
      });
    },

    async getOcelotUsageStats(req, ctx) {
      const db = statements.db(entityManager(ctx));
      const access = await requireMember(db.em, requireUser(ctx), req.organizationSlug);
      const organizationId = access.organization.id;
      const limits = planLimits(config, access.organization.plan);
      const [usage, row, notes] = [await todaysUsage(db.query, organizationId), await readConfig(db.query, organizationId), await countNotes(db.query, organizationId)];
      return {
        usage: create(UsageStatsSchema, {
          day: usage.day,
          queries: usage.queries,
          queryLimit: queryCap(config, access, row),
          toolActions: usage.tool_actions,
          toolActionLimit: limits.assistantToolActionsPerDay,
          notes,
          noteLimit: limits.notes,
        }),
      };
    },

    async preflightToolAction(req, ctx) {
      const judged = await judgeToolAction(statements.db(entityManager(ctx)), deps, requireUser(ctx), req);
      const reason = judged.refusal?.reason as RefusalReason | undefined;
      return {
        allowed: !judged.refusal,
        refusal: reason ? refusals[reason] : ToolRefusal.UNSPECIFIED,
        message: judged.refusal?.message ?? "",
        quotaWeight: judged.spec.weight,
        requiresConfirmation: judged.requiresConfirmation,
      };
    },
  };
}
