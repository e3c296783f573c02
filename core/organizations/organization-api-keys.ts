/**
 * Organization API keys, part of OrganizationsService: API keys confined to one organization,
 * made by its owners and admins. A key acts as its creator with their current role there (so a
 * creator demoted to member leaves the key a member's access, and one who leaves the organization
 * takes the key's access with them: removeMember revokes it). The confinement itself is enforced
 * in two places only: the auth interceptor (which procedures) and core/access.ts (which organization).
 */
import type { ServiceImpl } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import type { EntityManager } from "@mikro-orm/postgresql";
import {
  CreateOrganizationApiKeyResponseSchema,
  ListOrganizationApiKeysResponseSchema,
  OrganizationApiKeySchema,
  OrganizationsService,
  RevokeOrganizationApiKeyResponseSchema,
} from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { ApiKey } from "../db/entities.ts";
import { entityManager, requireUser, type UserCaller } from "../context.ts";
import type { CoreDeps } from "../deps.ts";
import { fail } from "../errors.ts";
import { holdManager, requireManager, type OrganizationAccess } from "../access.ts";
import { apiKeyToProto } from "../convert.ts";
import { apiKeyExpiresAt, createApiKey } from "../auth/api-keys.ts";
import { recordInOrganization } from "./organization-activity.ts";

type Impl = ServiceImpl<typeof OrganizationsService>;
type KeyMethods = Pick<Impl, "createOrganizationApiKey" | "listOrganizationApiKeys" | "revokeOrganizationApiKey">;

const keyDetails = (apiKey: ApiKey, extra: Record<string, string> = {}) => ({ name: apiKey.name, prefix: apiKey.prefix, creator: apiKey.user.email ?? "", ...extra });

/**
 * Within the transaction that removes a member: revokes the keys they made for the organization,
 * each an event in it (the key would stop working anyway, as its creator is no longer a member;
 * revoked, it cannot come back if they are added again).
 */
export async function revokeMemberKeys(tx: EntityManager, caller: UserCaller, access: OrganizationAccess, userId: string, now: Date): Promise<void> {
  const keys = await tx.find(ApiKey, { user: userId, organization: access.organization.id, revokedAt: null }, { populate: ["user"] });
  for (const apiKey of keys) {
    apiKey.revokedAt = now;
    recordInOrganization(tx, caller, access, {
      action: "organization_api_key.revoked",
      targetType: "api_key",
      targetId: apiKey.id,
      details: keyDetails(apiKey, { reason: "creator_left_organization" }),
    });
  }
}

export function organizationApiKeyMethods({ clock }: Pick<CoreDeps, "clock">): KeyMethods {
  return {
    async createOrganizationApiKey(req, ctx) {
      const caller = requireUser(ctx);
      // As with personal keys: a leaked key must not mint its own replacement.
      if (caller.credential.kind !== "session") {
        throw fail("permission_denied", "organization API keys are created by a signed-in user (the dashboard), not with an API key");
      }
      const expiresAt = apiKeyExpiresAt(req.expiry, clock);
      return entityManager(ctx).transactional(async (tx) => {
        // Held: a creator whose removal commits meanwhile makes no key (removal revokes theirs).
        const access = await holdManager(tx, caller, req.organizationSlug);
        const { apiKey, key } = createApiKey(tx, caller.user.id, req.name, expiresAt, access.organization);
        recordInOrganization(tx, caller, access, {
          action: "organization_api_key.created",
          targetType: "api_key",
          targetId: apiKey.id,
          details: { name: apiKey.name, prefix: apiKey.prefix, creator: caller.user.email },
        });
        await tx.flush();
        return create(CreateOrganizationApiKeyResponseSchema, { apiKey: apiKeyToProto(apiKey), key, creatorEmail: caller.user.email });
      });
    },

    async listOrganizationApiKeys(req, ctx) {
      const em = entityManager(ctx);
      const access = await requireManager(em, requireUser(ctx), req.organizationSlug);
      const keys = await em.find(
        ApiKey,
        { organization: access.organization.id, revokedAt: null },
        { populate: ["user", "organization"], orderBy: { createdAt: "desc", id: "asc" } },
      );
      return create(ListOrganizationApiKeysResponseSchema, {
        apiKeys: keys.map((k) => create(OrganizationApiKeySchema, { apiKey: apiKeyToProto(k), creatorUserId: k.user.id, creatorEmail: k.user.email })),
      });
    },

    async revokeOrganizationApiKey(req, ctx) {
      const caller = requireUser(ctx);
      await entityManager(ctx).transactional(async (tx) => {
        const access = await requireManager(tx, caller, req.organizationSlug);
        const apiKey = await tx.findOne(ApiKey, { id: req.apiKeyId, organization: access.organization.id, revokedAt: null }, { populate: ["user"] });
        if (!apiKey) throw fail("not_found", "API key not found");
        apiKey.revokedAt = clock.now();
        recordInOrganization(tx, caller, access, { action: "organization_api_key.revoked", targetType: "api_key", targetId: apiKey.id, details: keyDetails(apiKey) });
      });
      return create(RevokeOrganizationApiKeyResponseSchema, {});
    },
  };
}
