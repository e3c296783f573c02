/**
 * Account OAuth client management, part of AdminService: the apps that sign dashboard users in
 * through the Account OAuth issuer (ACCOUNT_BASE_URL/api/auth). They belong to the platform, not
 * to an organization, so only platform admins manage them and their activity events carry no
 * organization. The rules they share with Game OAuth clients live in core/oauth/client-fields.ts.
 */
import type { ClientVerb } from "../activity/kinds.ts";
import type { ServiceImpl } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import { LockMode } from "@mikro-orm/core";
import type { EntityManager } from "@mikro-orm/postgresql";
import {
  AdminService,
  CreateAccountOAuthClientResponseSchema,
  DeleteAccountOAuthClientResponseSchema,
  GetAccountOAuthClientResponseSchema,
  ListAccountOAuthClientsResponseSchema,
  AccountOAuthClientSchema,
  RotateAccountOAuthClientSecretResponseSchema,
  UpdateAccountOAuthClientResponseSchema,
  type AccountOAuthClient as AccountOAuthClientMessage,
} from "../../gen/outpost/admin/v1/admin_service_pb.js";
import { AccountOAuthClient } from "../db/account-oauth-entities.ts";
import { entityManager, requireUser, type UserCaller } from "../context.ts";
import type { CoreDeps } from "../deps.ts";
import { fail } from "../errors.ts";
import { requirePlatformAdmin } from "../access.ts";
import {
  applyDisabled,
  applyIdTokenAlg,
  applyNameAndRedirectUris,
  commonClientFields,
  idTokenAlgOf,
  issueClientSecret,
  normalizeRedirectUris,
  replaceClientSecret,
  recordClientActivity,
  updatedDetails,
} from "../oauth/client-fields.ts";
import { issueIdentifier } from "../../contract/secrets.ts";
import { applyOptions, newClientOptions, optionsToProto } from "./account-oauth-client-options.ts";
import { endClientGrants } from "../account-oauth/account-oauth-queries.ts";

type AccountOAuthClientMethods = Pick<
  ServiceImpl<typeof AdminService>,
  | "createAccountOAuthClient"
  | "listAccountOAuthClients"
  | "getAccountOAuthClient"
  | "updateAccountOAuthClient"
  | "rotateAccountOAuthClientSecret"
  | "deleteAccountOAuthClient"
>;

function clientToProto(client: AccountOAuthClient): AccountOAuthClientMessage {
  return create(AccountOAuthClientSchema, { ...commonClientFields(client), skipConsent: client.skipConsent, ...optionsToProto(client) });
}

/** The platform admin making the call (checked before anything is looked up). */
function requireAdmin(ctx: Parameters<AccountOAuthClientMethods["getAccountOAuthClient"]>[1]): UserCaller {
  const caller = requireUser(ctx);
  requirePlatformAdmin(caller);
  return caller;
}

/** The client with this client_id, or not_found. `lock` takes its row for the transaction. */
async function findClient(em: EntityManager, clientId: string, lock = false): Promise<AccountOAuthClient> {
  const client = await em.findOne(AccountOAuthClient, { clientId }, lock ? { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true } : {});
  if (!client) throw fail("not_found", "Account OAuth client not found");
  return client;
}

type Impl = AccountOAuthClientMethods;

/** Records `oauth_provider_client.<verb>` for the client, in the transaction `tx`. */
function activity(tx: EntityManager, caller: UserCaller, client: AccountOAuthClient, verb: ClientVerb, details: Record<string, string> = {}) {
  recordClientActivity(tx, caller, { type: "oauth_provider_client", organizationId: null }, client, verb, details);
}

const createAccountOAuthClient =
  ({ config }: Pick<CoreDeps, "config">): Impl["createAccountOAuthClient"] =>
  async (req, ctx) => {
    const caller = requireAdmin(ctx);
    const redirectUris = normalizeRedirectUris(req.redirectUris, config);
    const options = newClientOptions(req, config);
    return entityManager(ctx).transactional(async (tx) => {
      // A public client gets a secret too (the column keeps one), but it is never shown, and
      // the issuer accepts no secret from a client registered with "none".
      const secret = issueClientSecret("accountClientSecret");
      const isPublic = options.tokenEndpointAuthMethod === "none";
      const client = tx.create(AccountOAuthClient, {
        clientId: issueIdentifier("accountClient"),
        name: req.name,
        redirectUris,
        skipConsent: req.skipConsent ?? false,
        disabled: req.disabled ?? false,
        idTokenSignedResponseAlg: idTokenAlgOf(req.idTokenSignedResponseAlg),
        ...options,
        ...secret.columns,
        createdBy: caller.user.id,
      });
      activity(tx, caller, client, "created", {
        redirectUris: redirectUris.join(" "),
        skipConsent: String(client.skipConsent),
        disabled: String(client.disabled),
        allowedScopes: options.allowedScopes.join(" "),
        tokenEndpointAuthMethod: options.tokenEndpointAuthMethod,
        requirePkce: String(options.requirePkce),
        uri: options.uri ?? "",
        postLogoutRedirectUris: options.postLogoutRedirectUris.join(" "),
        idTokenSignedResponseAlg: client.idTokenSignedResponseAlg,
        ...(!isPublic && { secretPrefix: client.secretPrefix }),
      });
      await tx.flush();
      return create(CreateAccountOAuthClientResponseSchema, {
        clientId: client.clientId,
        clientSecret: isPublic ? "" : secret.value,
        client: clientToProto(client),
      });
    });
  };

const listAccountOAuthClients: Impl["listAccountOAuthClients"] = async (_req, ctx) => {
  requireAdmin(ctx);
  const clients = await entityManager(ctx).find(AccountOAuthClient, {}, { orderBy: { createdAt: "desc", id: "asc" } });
  return create(ListAccountOAuthClientsResponseSchema, { clients: clients.map(clientToProto) });
};

const getAccountOAuthClient: Impl["getAccountOAuthClient"] = async (req, ctx) => {
  requireAdmin(ctx);
  const client = await findClient(entityManager(ctx), req.clientId);
  return create(GetAccountOAuthClientResponseSchema, { client: clientToProto(client) });
};

/**
 * RFC 9700 §4.14.2: refresh tokens are bound to the client and its authentication. Switching a
 * client to `none` (public) would let a refresh token issued under its secret be used without it,
 * and a disabled client's grants must not come back when it is enabled again; so both end every
 * grant the client holds (codes, refresh-token families, access tokens). Enabling ends them too:
 * the only grants alive then were issued before the client was disabled (by a version that kept
 * them). Other changes (a confidential method for another, a secret rotation) keep them.
 */
async function endGrantsOnSecurityChange(
  tx: EntityManager,
  deps: Pick<CoreDeps, "statements" | "clock">,
  caller: UserCaller,
  client: AccountOAuthClient,
  reason: "auth_method_none" | "disabled" | "enabled",
): Promise<void> {
  const grants = await endClientGrants(deps.statements.on(tx), null, client.id, deps.clock.now());
  activity(tx, caller, client, "grants_revoked", { reason, grants: String(grants) });
}

const updateAccountOAuthClient =
  ({ config, statements, clock }: Pick<CoreDeps, "config" | "statements" | "clock">): Impl["updateAccountOAuthClient"] =>
  async (req, ctx) => {
    const caller = requireAdmin(ctx);
    const redirectUris = req.redirectUris ? normalizeRedirectUris(req.redirectUris.uris, config) : undefined;
    return entityManager(ctx).transactional(async (tx) => {
      const client = await findClient(tx, req.clientId, true);
      const changed: Record<string, string> = {};
      applyNameAndRedirectUris(client, { name: req.name, redirectUris }, changed);
      applyIdTokenAlg(client, req.idTokenSignedResponseAlg, changed);
      if (req.skipConsent !== undefined && req.skipConsent !== client.skipConsent) {
        client.skipConsent = req.skipConsent;
        changed.skipConsent = String(req.skipConsent);
      }
      applyOptions(client, req, config, changed);
      if (Object.keys(changed).length) activity(tx, caller, client, "updated", updatedDetails(changed));
      const toggled = applyDisabled(client, req.disabled);
      if (toggled) activity(tx, caller, client, toggled);
      // The client's row is locked (findClient): no token is issued to it meanwhile.
      const reason = toggled ?? (changed.tokenEndpointAuthMethod === "none" ? "auth_method_none" : undefined);
      if (reason) await endGrantsOnSecurityChange(tx, { statements, clock }, caller, client, reason);
      await tx.flush();
      return create(UpdateAccountOAuthClientResponseSchema, { client: clientToProto(client) });
    });
  };

const rotateAccountOAuthClientSecret: Impl["rotateAccountOAuthClientSecret"] = async (req, ctx) => {
  const caller = requireAdmin(ctx);
  return entityManager(ctx).transactional(async (tx) => {
    const client = await findClient(tx, req.clientId, true);
    const clientSecret = replaceClientSecret(client, "accountClientSecret");
    activity(tx, caller, client, "secret_rotated", { secretPrefix: client.secretPrefix });
    return create(RotateAccountOAuthClientSecretResponseSchema, { clientId: client.clientId, clientSecret });
  });
};

const deleteAccountOAuthClient: Impl["deleteAccountOAuthClient"] = async (req, ctx) => {
  const caller = requireAdmin(ctx);
  await entityManager(ctx).transactional(async (tx) => {
    const client = await findClient(tx, req.clientId, true);
    activity(tx, caller, client, "deleted");
    await tx.flush();
    // Its consents, authorization requests, codes and access tokens go with it (ON DELETE CASCADE).
    await tx.nativeDelete(AccountOAuthClient, { id: client.id });
  });
  return create(DeleteAccountOAuthClientResponseSchema, {});
};

export function createAccountOAuthClientMethods(deps: CoreDeps): AccountOAuthClientMethods {
  return {
    createAccountOAuthClient: createAccountOAuthClient(deps),
    listAccountOAuthClients,
    getAccountOAuthClient,
    updateAccountOAuthClient: updateAccountOAuthClient(deps),
    rotateAccountOAuthClientSecret,
    deleteAccountOAuthClient,
  };
}
