import type { ServiceImpl } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  AuthService,
  CreateApiKeyResponseSchema,
  CredentialKind,
  GetSessionResponseSchema,
  ListApiKeysResponseSchema,
  RevokeApiKeyResponseSchema,
} from "../../gen/outpost/auth/v1/auth_service_pb.js";
import { ApiKey, User } from "../db/entities.ts";
import { entityManager, requireUser } from "../context.ts";
import type { CoreDeps } from "../deps.ts";
import { fail } from "../errors.ts";
import { apiKeyExpiresAt, createApiKey } from "./api-keys.ts";
import { recordActivity } from "../activity/record.ts";
import { apiKeyToProto, userToProto } from "../convert.ts";
import { createConsentMethods } from "./consents.ts";
import { createSessionMethods } from "./session-methods.ts";
import { sendVerificationEmail } from "../identity/verification-methods.ts";

/** The caller's own account: session facts, sessions and password, API keys and Account OAuth consents. */
export function createAuthService(deps: CoreDeps): ServiceImpl<typeof AuthService> {
  const { clock } = deps;
  return {
    ...createConsentMethods(deps),
    ...createSessionMethods(deps),
    sendVerificationEmail: sendVerificationEmail(deps),

    async getSession(_req, ctx) {
      const caller = requireUser(ctx);
      const user = await entityManager(ctx).findOneOrFail(User, { id: caller.user.id });
      return create(GetSessionResponseSchema, {
        user: userToProto(user),
        credential: caller.credential.kind === "session" ? CredentialKind.SESSION : CredentialKind.API_KEY,
        credentialId: caller.credential.id,
        expiresAt: caller.credential.expiresAt ? timestampFromDate(caller.credential.expiresAt) : undefined,
      });
    },

    async createApiKey(req, ctx) {
      const caller = requireUser(ctx);
      // A key made with a key would outlive the first's expiry and survive its revocation: a
      // leaked key must not be able to mint its own replacement.
      if (caller.credential.kind !== "session") {
        throw fail("permission_denied", "API keys are created by a signed-in user (the dashboard's Security page), not with an API key");
      }
      const expiresAt = apiKeyExpiresAt(req.expiry, clock);
      return entityManager(ctx).transactional(async (tx) => {
        const { apiKey, key } = createApiKey(tx, caller.user.id, req.name, expiresAt);
        recordActivity(tx, caller, {
          action: "api_key.created",
          targetType: "api_key",
          targetId: apiKey.id,
          details: { name: apiKey.name, prefix: apiKey.prefix },
        });
        await tx.flush();
        return create(CreateApiKeyResponseSchema, { apiKey: apiKeyToProto(apiKey), key });
      });
    },

    async listApiKeys(_req, ctx) {
      const caller = requireUser(ctx);
      const keys = await entityManager(ctx).find(
        ApiKey,
        { user: caller.user.id, revokedAt: null },
        { orderBy: { createdAt: "desc", id: "asc" }, populate: ["organization"] },
      );
      return create(ListApiKeysResponseSchema, { apiKeys: keys.map(apiKeyToProto) });
    },

    async revokeApiKey(req, ctx) {
      const caller = requireUser(ctx);
      await entityManager(ctx).transactional(async (tx) => {
        const apiKey = await tx.findOne(ApiKey, { id: req.apiKeyId, user: caller.user.id, revokedAt: null });
        if (!apiKey) throw fail("not_found", "API key not found");
        apiKey.revokedAt = clock.now();
        // An organization API key's end is its organization's event too.
        recordActivity(tx, caller, {
          organizationId: apiKey.organization?.id ?? null,
          action: apiKey.organization ? "organization_api_key.revoked" : "api_key.revoked",
          targetType: "api_key",
          targetId: apiKey.id,
          details: { name: apiKey.name, prefix: apiKey.prefix },
        });
      });
      return create(RevokeApiKeyResponseSchema, {});
    },
  };
}
