/**
 * The caller's Account OAuth consents, part of AuthService: which apps they let sign them in and
 * what each may read. Only ever the caller's own; another user's consent looks absent.
 */
import type { ServiceImpl } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { AuthService, ListConsentsResponseSchema, RevokeConsentResponseSchema } from "../../gen/outpost/auth/v1/auth_service_pb.js";
import { ConsentSchema, type Consent as ConsentMessage } from "../../gen/outpost/auth/v1/resources_pb.js";
import { AccountConsent } from "../db/account-oauth-entities.ts";
import { entityManager, requireUser } from "../context.ts";
import { fail } from "../errors.ts";
import { recordActivity } from "../activity/record.ts";
import type { CoreDeps } from "../deps.ts";
import { endClientGrants } from "../account-oauth/account-oauth-queries.ts";

type ConsentMethods = Pick<ServiceImpl<typeof AuthService>, "listConsents" | "revokeConsent">;

/** A consent with its client loaded. */
function consentToProto(consent: AccountConsent): ConsentMessage {
  return create(ConsentSchema, {
    clientId: consent.client.clientId,
    clientName: consent.client.name,
    scopes: consent.scopes,
    createdAt: timestampFromDate(consent.createdAt),
    updatedAt: timestampFromDate(consent.updatedAt),
  });
}

export function createConsentMethods({ clock, statements }: Pick<CoreDeps, "clock" | "statements">): ConsentMethods {
  return {
    async listConsents(_req, ctx) {
      const caller = requireUser(ctx);
      const consents = await entityManager(ctx).find(AccountConsent, { user: caller.user.id }, { populate: ["client"], orderBy: { updatedAt: "desc", id: "asc" } });
      return create(ListConsentsResponseSchema, { consents: consents.map(consentToProto) });
    },

    async revokeConsent(req, ctx) {
      const caller = requireUser(ctx);
      await entityManager(ctx).transactional(async (tx) => {
        // An unknown app and an app the caller never consented to get the same answer.
        const consent = await tx.findOne(AccountConsent, { user: caller.user.id, client: { clientId: req.clientId } }, { populate: ["client"], refresh: true });
        const notFound = () => fail("not_found", "no consent for this app");
        if (!consent) throw notFound();
        // Deleted by id and counted, so of two revokes at once only one succeeds and records it.
        if (!(await tx.nativeDelete(AccountConsent, { id: consent.id }))) throw notFound();
        // What the app holds from this user ends with the consent.
        await endClientGrants(statements.on(tx), caller.user.id, consent.client.id, clock.now());
        // The row has no public id: the user knows the consent by the app it was given to.
        recordActivity(tx, caller, {
          action: "account_consent.revoked",
          targetType: "account_consent",
          targetId: consent.client.clientId,
          details: { clientId: consent.client.clientId, clientName: consent.client.name, scopes: consent.scopes.join(" ") },
        });
      });
      return create(RevokeConsentResponseSchema, {});
    },
  };
}
