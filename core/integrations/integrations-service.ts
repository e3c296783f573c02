/**
 * IntegrationsService: the outside services an organization sends messages to (Discord, signed
 * webhooks, email). Owners and admins of the organization manage them; an integration of another
 * organization does not exist. Every change, and every test send, is an activity event; a change
 * is written in the same transaction as its event.
 */
import { countTestSend } from "../ratelimit/test-sends.ts";
import { randomUUID } from "node:crypto";
import type { ServiceImpl } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import { LockMode } from "@mikro-orm/core";
import type { EntityManager } from "@mikro-orm/postgresql";
import {
  CreateIntegrationResponseSchema,
  DeleteIntegrationResponseSchema,
  IntegrationsService,
  ListIntegrationsResponseSchema,
  RotateIntegrationSecretResponseSchema,
  TestIntegrationResponseSchema,
  UpdateIntegrationResponseSchema,
} from "../../gen/outpost/integrations/v1/integrations_service_pb.js";
import { Integration } from "../db/integration-entities.ts";
import { Organization } from "../db/entities.ts";
import { entityManager, requireUser, type UserCaller } from "../context.ts";
import type { CoreDeps } from "../deps.ts";
import { fail, fieldFail } from "../errors.ts";
import { requireManager, type OrganizationAccess } from "../access.ts";
import { appendActivity, recordActivity } from "../activity/record.ts";
import { openCredentials, sealCredentials, setCredentials, type IntegrationCredentials } from "./credentials.ts";
import { checkTarget, integrationToProto, targetOf } from "./integration-fields.ts";
import { issueWebhookSecret, webhookSecretPrefix } from "./standard-webhooks.ts";
import { deliverToIntegration } from "./deliver.ts";
import { testMessage } from "./test-message.ts";
import { requireMemberRecipients } from "./email-recipients.ts";

type Impl = ServiceImpl<typeof IntegrationsService>;

/** More than this many integrations in one organization is refused (each test and alert fans out to all). */
export const maxIntegrationsPerOrganization = 50;

/** Records `integration.<verb>` in the unit of work `tx`. */
function activity(
  tx: EntityManager,
  caller: UserCaller,
  row: Integration,
  verb: "created" | "updated" | "deleted" | "secret_rotated",
  details: Record<string, string> = {},
): void {
  recordActivity(tx, caller, {
    action: `integration.${verb}`,
    targetType: "integration",
    targetId: row.id,
    organizationId: row.organization.id,
    details: { kind: row.kind, name: row.name, ...details },
  });
}

/** The integration with this id in the organization the caller manages; `lock` takes its row. */
async function requireIntegration(
  em: EntityManager,
  caller: UserCaller,
  req: { organizationSlug: string; integrationId: string },
  lock = false,
): Promise<OrganizationAccess & { row: Integration }> {
  const access = await requireManager(em, caller, req.organizationSlug);
  const row = await em.findOne(
    Integration,
    { id: req.integrationId, organization: access.organization.id },
    lock ? { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true } : {},
  );
  if (!row) throw fail("not_found", "integration not found");
  return { ...access, row };
}

const createIntegration =
  (deps: CoreDeps): Impl["createIntegration"] =>
  async (req, ctx) => {
    const caller = requireUser(ctx);
    const target = targetOf(req.target);
    if (!target) throw fieldFail([{ field: "target", message: "one of discord, webhook or email is required" }]);
    return entityManager(ctx).transactional(async (tx) => {
      const access = await requireManager(tx, caller, req.organizationSlug);
      const { displayUrl } = checkTarget(target, deps.outbound);
      if (target.kind === "email" && !deps.mailer.configured) {
        throw fail("failed_precondition", "this Outpost has no SMTP server configured (SMTP_URL), so it cannot send email");
      }
      if (target.kind === "email") await requireMemberRecipients(deps.statements.on(tx), access.organization.id, target.recipients);
      // Serializes creations in the organization, so the cap holds under concurrent requests.
      await tx.findOneOrFail(Organization, { id: access.organization.id }, { lockMode: LockMode.PESSIMISTIC_WRITE });
      if ((await tx.count(Integration, { organization: access.organization.id })) >= maxIntegrationsPerOrganization) {
        throw fail("failed_precondition", `an organization has at most ${maxIntegrationsPerOrganization} integrations`);
      }
      const id = randomUUID();
      const secret = target.kind === "webhook" ? issueWebhookSecret() : "";
      const credentials: IntegrationCredentials = target.kind === "email" ? {} : { url: target.url, ...(secret && { secret }) };
      const now = deps.clock.now();
      const row = tx.create(Integration, {
        id,
        organization: access.organization,
        kind: target.kind,
        name: req.name,
        enabled: true,
        displayUrl,
        recipients: target.kind === "email" ? target.recipients : [],
        secretPrefix: secret ? webhookSecretPrefix(secret) : "",
        ...sealCredentials(deps.keyEncryptionKey(), id, credentials),
        createdAt: now,
        updatedAt: now,
      });
      activity(tx, caller, row, "created", { url: displayUrl, recipients: row.recipients.join(" "), secretPrefix: row.secretPrefix });
      await tx.flush();
      return create(CreateIntegrationResponseSchema, { integration: integrationToProto(row), secret });
    });
  };

const listIntegrations: Impl["listIntegrations"] = async (req, ctx) => {
  const em = entityManager(ctx);
  const access = await requireManager(em, requireUser(ctx), req.organizationSlug);
  const rows = await em.find(Integration, { organization: access.organization.id }, { orderBy: { createdAt: "asc", id: "asc" } });
  return create(ListIntegrationsResponseSchema, { integrations: rows.map(integrationToProto) });
};

const updateIntegration =
  (deps: CoreDeps): Impl["updateIntegration"] =>
  async (req, ctx) => {
    const caller = requireUser(ctx);
    return entityManager(ctx).transactional(async (tx) => {
      const { row, organization } = await requireIntegration(tx, caller, req, true);
      const changed: Record<string, string> = {};
      const target = targetOf(req.target);
      if (target) {
        if (target.kind !== row.kind) throw fieldFail([{ field: target.kind, message: `this integration is a ${row.kind} integration; its kind cannot change` }]);
        const { displayUrl } = checkTarget(target, deps.outbound);
        if (target.kind === "email") {
          await requireMemberRecipients(deps.statements.on(tx), organization.id, target.recipients);
          row.recipients = target.recipients;
          changed.recipients = target.recipients.join(" ");
        } else {
          const current = openCredentials(deps.keyEncryptionKey(), row);
          setCredentials(deps.keyEncryptionKey(), row, { ...current, url: target.url });
          row.displayUrl = displayUrl;
          changed.url = displayUrl;
        }
      }
      if (req.name !== undefined && req.name !== row.name) changed.newName = row.name = req.name;
      if (req.enabled !== undefined && req.enabled !== row.enabled) changed.enabled = String((row.enabled = req.enabled));
      if (Object.keys(changed).length) {
        row.updatedAt = deps.clock.now();
        activity(tx, caller, row, "updated", changed);
      }
      await tx.flush();
      return create(UpdateIntegrationResponseSchema, { integration: integrationToProto(row) });
    });
  };

const deleteIntegration: Impl["deleteIntegration"] = async (req, ctx) => {
  const caller = requireUser(ctx);
  await entityManager(ctx).transactional(async (tx) => {
    const { row } = await requireIntegration(tx, caller, req, true);
    activity(tx, caller, row, "deleted");
    await tx.flush();
    await tx.nativeDelete(Integration, { id: row.id });
  });
  return create(DeleteIntegrationResponseSchema, {});
};

const rotateIntegrationSecret =
  (deps: CoreDeps): Impl["rotateIntegrationSecret"] =>
  async (req, ctx) => {
    const caller = requireUser(ctx);
    return entityManager(ctx).transactional(async (tx) => {
      const { row } = await requireIntegration(tx, caller, req, true);
      if (row.kind !== "webhook") throw fail("failed_precondition", "only a webhook integration has a signing secret");
      const secret = issueWebhookSecret();
      const current = openCredentials(deps.keyEncryptionKey(), row);
      setCredentials(deps.keyEncryptionKey(), row, { ...current, secret });
      row.secretPrefix = webhookSecretPrefix(secret);
      row.updatedAt = deps.clock.now();
      activity(tx, caller, row, "secret_rotated", { secretPrefix: row.secretPrefix });
      await tx.flush();
      return create(RotateIntegrationSecretResponseSchema, { integration: integrationToProto(row), secret });
    });
  };

/** Sends the test message now (no transaction is held meanwhile), then records what happened. */
const testIntegration =
  (deps: CoreDeps): Impl["testIntegration"] =>
  async (req, ctx) => {
    const caller = requireUser(ctx);
    const em = entityManager(ctx);
    const { row, organization } = await requireIntegration(em, caller, req);
    await countTestSend(deps.rateLimits, caller.user.id);
    const message = testMessage(organization, row, caller, deps.clock.now());
    const outcome = await deliverToIntegration(deps, row, message);
    await appendActivity(deps.statements.on(em), caller, {
      action: "integration.tested",
      targetType: "integration",
      targetId: row.id,
      organizationId: organization.id,
      details: {
        kind: row.kind,
        name: row.name,
        ok: String(outcome.ok),
        httpStatus: String(outcome.httpStatus),
        ...(outcome.error && { error: outcome.error.slice(0, 500) }),
      },
    });
    return create(TestIntegrationResponseSchema, {
      ok: outcome.ok,
      httpStatus: outcome.httpStatus,
      error: outcome.error,
      messageId: message.id,
      durationMs: outcome.durationMs,
    });
  };

export function createIntegrationsService(deps: CoreDeps): Impl {
  return {
    createIntegration: createIntegration(deps),
    listIntegrations,
    updateIntegration: updateIntegration(deps),
    deleteIntegration,
    rotateIntegrationSecret: rotateIntegrationSecret(deps),
    testIntegration: testIntegration(deps),
  };
}
