/**
 * AlertsService: an organization's alert rules and their deliveries. Owners and admins manage
 * them; a rule of another organization does not exist. Every rule change is an activity event in
 * the change's transaction. Matching and sending are elsewhere: the `alert_match` trigger writes
 * the outbox (migration 0028), the worker sends it (worker.ts).
 */
import { randomUUID } from "node:crypto";
import type { ServiceImpl } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import { LockMode } from "@mikro-orm/core";
import type { EntityManager } from "@mikro-orm/postgresql";
import {
  AlertsService,
  CreateAlertRuleResponseSchema,
  DeleteAlertRuleResponseSchema,
  ListAlertRulesResponseSchema,
  UpdateAlertRuleResponseSchema,
} from "../../gen/outpost/alerts/v1/alerts_service_pb.js";
import { AlertRule } from "../db/alert-entities.ts";
import { Organization } from "../db/entities.ts";
import { inTransaction } from "../db/sql.ts";
import { entityManager, requireUser, type UserCaller } from "../context.ts";
import type { CoreDeps } from "../deps.ts";
import { fail } from "../errors.ts";
import { requireManager } from "../access.ts";
import { recordActivity } from "../activity/record.ts";
import { ruleIntegrations, setRuleIntegrations } from "./alert-queries.ts";
import { checkSpec, ruleToProto } from "./rule-fields.ts";
import { listAlertDeliveries } from "./delivery-list.ts";

type Impl = ServiceImpl<typeof AlertsService>;

/** More than this many rules in one organization is refused (each event is matched against them). */
export const maxRulesPerOrganization = 50;

function activity(tx: EntityManager, caller: UserCaller, row: AlertRule, verb: "created" | "updated" | "deleted"): void {
  recordActivity(tx, caller, {
    action: `alert_rule.${verb}`,
    targetType: "alert_rule",
    targetId: row.id,
    organizationId: row.organization.id,
    serverId: row.serverId,
    details: { name: row.name, enabled: String(row.enabled) },
  });
}

async function requireRule(tx: EntityManager, caller: UserCaller, req: { organizationSlug: string; ruleId: string }) {
  const access = await requireManager(tx, caller, req.organizationSlug);
  const row = await tx.findOne(AlertRule, { id: req.ruleId, organization: access.organization.id }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
  if (!row) throw fail("not_found", "alert rule not found");
  return { ...access, row };
}

const createAlertRule =
  (deps: CoreDeps): Impl["createAlertRule"] =>
  async (req, ctx) => {
    const caller = requireUser(ctx);
    return entityManager(ctx).transactional(async (tx) => {
      const access = await requireManager(tx, caller, req.organizationSlug);
      const { columns, integrationIds } = await checkSpec(tx, access.organization.id, req.spec!);
      // Serializes creations in the organization, so the cap holds under concurrent requests.
      await tx.findOneOrFail(Organization, { id: access.organization.id }, { lockMode: LockMode.PESSIMISTIC_WRITE });
      if ((await tx.count(AlertRule, { organization: access.organization.id })) >= maxRulesPerOrganization) {
        throw fail("failed_precondition", `an organization has at most ${maxRulesPerOrganization} alert rules`);
      }
      const now = deps.clock.now();
      const row = tx.create(AlertRule, { id: randomUUID(), organization: access.organization, ...columns, createdAt: now, updatedAt: now });
      await tx.flush();
      await setRuleIntegrations(inTransaction(tx), row.id, integrationIds);
      activity(tx, caller, row, "created");
      await tx.flush();
      return create(CreateAlertRuleResponseSchema, { rule: ruleToProto(row, integrationIds) });
    });
  };

const listAlertRules =
  (deps: Pick<CoreDeps, "statements">): Impl["listAlertRules"] =>
  async (req, ctx) => {
    const em = entityManager(ctx);
    const access = await requireManager(em, requireUser(ctx), req.organizationSlug);
    const rows = await em.find(AlertRule, { organization: access.organization.id }, { orderBy: { createdAt: "asc", id: "asc" } });
    const links = await ruleIntegrations(
      deps.statements.on(em),
      rows.map((r) => r.id),
    );
    return create(ListAlertRulesResponseSchema, { rules: rows.map((r) => ruleToProto(r, links.get(r.id) ?? [])) });
  };

const updateAlertRule =
  (deps: CoreDeps): Impl["updateAlertRule"] =>
  async (req, ctx) => {
    const caller = requireUser(ctx);
    return entityManager(ctx).transactional(async (tx) => {
      const { row, organization } = await requireRule(tx, caller, req);
      const { columns, integrationIds } = await checkSpec(tx, organization.id, req.spec!);
      Object.assign(row, columns, { updatedAt: deps.clock.now() });
      await tx.flush();
      await setRuleIntegrations(inTransaction(tx), row.id, integrationIds);
      activity(tx, caller, row, "updated");
      await tx.flush();
      return create(UpdateAlertRuleResponseSchema, { rule: ruleToProto(row, integrationIds) });
    });
  };

const deleteAlertRule: Impl["deleteAlertRule"] = async (req, ctx) => {
  const caller = requireUser(ctx);
  await entityManager(ctx).transactional(async (tx) => {
    const { row } = await requireRule(tx, caller, req);
    await tx.nativeDelete(AlertRule, { id: row.id });
    activity(tx, caller, row, "deleted");
    await tx.flush();
  });
  return create(DeleteAlertRuleResponseSchema, {});
};

export function createAlertsService(deps: CoreDeps): Impl {
  return {
    createAlertRule: createAlertRule(deps),
    listAlertRules: listAlertRules(deps),
    updateAlertRule: updateAlertRule(deps),
    deleteAlertRule,
    listAlertDeliveries: listAlertDeliveries(deps),
  };
}
