/**
 * Game OAuth client management, part of OrganizationsService: the apps that sign players in
 * through the Game OAuth issuer. Owners and admins of the client's organization manage them;
 * everyone else meets the same answers as for the organization itself.
 */
import type { ClientVerb } from "../activity/kinds.ts";
import type { ServiceImpl } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import { LockMode } from "@mikro-orm/core";
import type { EntityManager } from "@mikro-orm/postgresql";
import {
  CreateGameOAuthClientResponseSchema,
  DeleteGameOAuthClientResponseSchema,
  GetGameOAuthClientResponseSchema,
  ListGameOAuthClientsResponseSchema,
  OrganizationsService,
  RotateGameOAuthClientSecretResponseSchema,
  UpdateGameOAuthClientResponseSchema,
} from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { GameOAuthClientSchema, VerifierPolicy, type GameOAuthClient as GameOAuthClientMessage } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { Server } from "../db/entities.ts";
import { GameOAuthClient, GameOAuthClientServer } from "../db/game-oauth-entities.ts";
import { entityManager, requireUser, type UserCaller } from "../context.ts";
import type { CoreDeps } from "../deps.ts";
import { DomainError, fail, fieldFail } from "../errors.ts";
import { requireManager, reservePlanCapacity, type OrganizationAccess } from "../access.ts";
import {
  applyDisabled,
  applyIdTokenAlg,
  applyNameAndRedirectUris,
  commonClientFields,
  idTokenAlgOf,
  issueClientSecret,
  normalizeRedirectUris,
  replaceClientSecret,
  sameList,
  recordClientActivity,
  updatedDetails,
} from "../oauth/client-fields.ts";
import { issueIdentifier } from "../../contract/secrets.ts";

type GameOAuthClientMethods = Pick<
  ServiceImpl<typeof OrganizationsService>,
  "createGameOAuthClient" | "listGameOAuthClients" | "getGameOAuthClient" | "updateGameOAuthClient" | "rotateGameOAuthClientSecret" | "deleteGameOAuthClient"
>;

type Policy = "any_server" | "selected_servers";

const policies: Record<Policy, VerifierPolicy> = {
  any_server: VerifierPolicy.ANY_SERVER,
  selected_servers: VerifierPolicy.SELECTED_SERVERS,
};

function policyFromProto(policy: VerifierPolicy): Policy {
  const found = (Object.keys(policies) as Policy[]).find((name) => policies[name] === policy);
  if (!found) throw fieldFail([{ field: "verifier_policy", message: "must be any_server or selected_servers" }]);
  return found;
}

function clientToProto(client: GameOAuthClient, allowedServerIds: readonly string[]): GameOAuthClientMessage {
  return create(GameOAuthClientSchema, {
    ...commonClientFields(client),
    verifierPolicy: policies[client.verifierPolicy as Policy] ?? VerifierPolicy.UNSPECIFIED,
    allowedServerIds: [...allowedServerIds],
  });
}

/**
 * The allowed servers for a policy, sorted: none under any_server (a list is refused rather than
 * ignored), at least one under selected_servers, each a server of the organization. A server of
 * another organization gets the same answer as one that does not exist.
 */
async function allowedServers(em: EntityManager, organizationId: string, policy: Policy, ids: readonly string[]): Promise<string[]> {
  if (policy === "any_server") {
    if (ids.length) throw fieldFail([{ field: "allowed_server_ids", message: "must be empty when verifierPolicy is any_server" }]);
    return [];
  }
  if (!ids.length) throw fieldFail([{ field: "allowed_server_ids", message: "selected_servers needs at least one server" }]);
  const found = new Set((await em.find(Server, { id: { $in: [...ids] }, organization: organizationId }, { fields: ["id"] })).map((s) => s.id));
  const problems = ids.flatMap((id, index) => (found.has(id) ? [] : [{ field: "allowed_server_ids", index, message: `no server ${id} in this organization` }]));
  if (problems.length) throw fieldFail(problems);
  return [...ids].sort();
}

/** Each client's allowed server ids, sorted. */
async function allowedServerIdsOf(em: EntityManager, clients: readonly GameOAuthClient[]): Promise<Map<string, string[]>> {
  const byClient = new Map(clients.map((c) => [c.id, [] as string[]]));
  if (!clients.length) return byClient;
  const links = await em.find(GameOAuthClientServer, { client: { $in: clients.map((c) => c.id) } }, { orderBy: { server: "asc" } });
  for (const link of links) byClient.get(link.client.id)?.push(link.server.id);
  return byClient;
}

/** Makes the client's allowed servers exactly `ids`, in the unit of work. */
async function setAllowedServers(em: EntityManager, client: GameOAuthClient, ids: readonly string[]): Promise<void> {
  const links = await em.find(GameOAuthClientServer, { client: client.id });
  for (const link of links) if (!ids.includes(link.server.id)) em.remove(link);
  const kept = new Set(links.map((l) => l.server.id));
  for (const id of ids) if (!kept.has(id)) em.create(GameOAuthClientServer, { client, server: id });
}

interface ClientAccess extends OrganizationAccess {
  client: GameOAuthClient;
}

/**
 * A client the caller may manage. Outside its organization it does not exist; within it, the
 * organization's rule for managers applies. `lock` takes the client's row for the transaction.
 */
export async function requireClientManager(em: EntityManager, caller: UserCaller, clientId: string, lock = false): Promise<ClientAccess> {
  const notFound = () => fail("not_found", "Game OAuth client not found");
  const found = await em.findOne(GameOAuthClient, { clientId }, { populate: ["organization"] });
  if (!found) throw notFound();
  const access = await requireManager(em, caller, found.organization.slug).catch((error: unknown) => {
    throw error instanceof DomainError && error.reason === "not_found" ? notFound() : error;
  });
  const client = lock ? await em.findOneOrFail(GameOAuthClient, { id: found.id }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true }) : found;
  return { ...access, client };
}

type Impl = GameOAuthClientMethods;

/** Records `game_oauth_client.<verb>` for the client, in the transaction `tx`. */
function activity(tx: EntityManager, caller: UserCaller, client: GameOAuthClient, verb: ClientVerb, details: Record<string, string> = {}) {
  recordClientActivity(tx, caller, { type: "game_oauth_client", organizationId: client.organization.id }, client, verb, details);
}

const createGameOAuthClient =
  ({ config }: Pick<CoreDeps, "config">): Impl["createGameOAuthClient"] =>
  async (req, ctx) => {
    const caller = requireUser(ctx);
    return entityManager(ctx).transactional(async (tx) => {
      const access = await requireManager(tx, caller, req.organizationSlug);
      const organizationId = access.organization.id;
      const redirectUris = normalizeRedirectUris(req.redirectUris, config);
      const policy = policyFromProto(req.verifierPolicy);
      const serverIds = await allowedServers(tx, organizationId, policy, req.allowedServerIds);
      await reservePlanCapacity(tx, config, organizationId, "gameOAuthClients", () => tx.count(GameOAuthClient, { organization: organizationId }));
      const secret = issueClientSecret("gameClientSecret");
      const client = tx.create(GameOAuthClient, {
        organization: access.organization,
        clientId: issueIdentifier("gameClient"),
        name: req.name,
        redirectUris,
        verifierPolicy: policy,
        idTokenSignedResponseAlg: idTokenAlgOf(req.idTokenSignedResponseAlg),
        ...secret.columns,
      });
      for (const server of serverIds) tx.create(GameOAuthClientServer, { client, server });
      activity(tx, caller, client, "created", {
        redirectUris: redirectUris.join(" "),
        verifierPolicy: policy,
        allowedServerIds: serverIds.join(" "),
        idTokenSignedResponseAlg: client.idTokenSignedResponseAlg,
        secretPrefix: client.secretPrefix,
      });
      await tx.flush();
      return create(CreateGameOAuthClientResponseSchema, { client: clientToProto(client, serverIds), clientSecret: secret.value });
    });
  };

const listGameOAuthClients: Impl["listGameOAuthClients"] = async (req, ctx) => {
  const em = entityManager(ctx);
  const access = await requireManager(em, requireUser(ctx), req.organizationSlug);
  const clients = await em.find(GameOAuthClient, { organization: access.organization.id }, { orderBy: { createdAt: "asc", id: "asc" } });
  const servers = await allowedServerIdsOf(em, clients);
  return create(ListGameOAuthClientsResponseSchema, { clients: clients.map((c) => clientToProto(c, servers.get(c.id)!)) });
};

const getGameOAuthClient: Impl["getGameOAuthClient"] = async (req, ctx) => {
  const em = entityManager(ctx);
  const { client } = await requireClientManager(em, requireUser(ctx), req.clientId);
  const servers = await allowedServerIdsOf(em, [client]);
  return create(GetGameOAuthClientResponseSchema, { client: clientToProto(client, servers.get(client.id)!) });
};

const updateGameOAuthClient =
  ({ config }: Pick<CoreDeps, "config">): Impl["updateGameOAuthClient"] =>
  async (req, ctx) => {
    const caller = requireUser(ctx);
    return entityManager(ctx).transactional(async (tx) => {
      const { client, organization } = await requireClientManager(tx, caller, req.clientId, true);
      const current = (await allowedServerIdsOf(tx, [client])).get(client.id)!;
      const redirectUris = req.redirectUris ? normalizeRedirectUris(req.redirectUris.uris, config) : undefined;
      const policy = req.verifierPolicy === undefined ? (client.verifierPolicy as Policy) : policyFromProto(req.verifierPolicy);
      // Under any_server the list is always empty, so switching to it clears the old list. The
      // policy is checked only when it or the list is given: a rename never fails on it.
      const requested = req.allowedServerIds?.ids ?? (policy === "any_server" ? [] : current);
      const policyGiven = req.verifierPolicy !== undefined || req.allowedServerIds !== undefined;
      const serverIds = policyGiven ? await allowedServers(tx, organization.id, policy, requested) : current;

      const changed: Record<string, string> = {};
      applyNameAndRedirectUris(client, { name: req.name, redirectUris }, changed);
      applyIdTokenAlg(client, req.idTokenSignedResponseAlg, changed);
      if (policy !== client.verifierPolicy) {
        client.verifierPolicy = policy;
        changed.verifierPolicy = policy;
      }
      if (!sameList(serverIds, current)) {
        await setAllowedServers(tx, client, serverIds);
        changed.allowedServerIds = serverIds.join(" ");
      }
      if (Object.keys(changed).length) activity(tx, caller, client, "updated", updatedDetails(changed));
      const toggled = applyDisabled(client, req.disabled);
      if (toggled) activity(tx, caller, client, toggled);
      await tx.flush();
      return create(UpdateGameOAuthClientResponseSchema, { client: clientToProto(client, serverIds) });
    });
  };

const rotateGameOAuthClientSecret: Impl["rotateGameOAuthClientSecret"] = async (req, ctx) => {
  const caller = requireUser(ctx);
  return entityManager(ctx).transactional(async (tx) => {
    const { client } = await requireClientManager(tx, caller, req.clientId, true);
    const clientSecret = replaceClientSecret(client, "gameClientSecret");
    activity(tx, caller, client, "secret_rotated", { secretPrefix: client.secretPrefix });
    return create(RotateGameOAuthClientSecretResponseSchema, { clientId: client.clientId, clientSecret });
  });
};

const deleteGameOAuthClient: Impl["deleteGameOAuthClient"] = async (req, ctx) => {
  const caller = requireUser(ctx);
  await entityManager(ctx).transactional(async (tx) => {
    const { client } = await requireClientManager(tx, caller, req.clientId, true);
    activity(tx, caller, client, "deleted");
    await tx.flush();
    // Its allowed-server rows go with it (ON DELETE CASCADE).
    await tx.nativeDelete(GameOAuthClient, { id: client.id });
  });
  return create(DeleteGameOAuthClientResponseSchema, {});
};

export function createGameOAuthClientMethods(deps: CoreDeps): GameOAuthClientMethods {
  return {
    createGameOAuthClient: createGameOAuthClient(deps),
    listGameOAuthClients,
    getGameOAuthClient,
    updateGameOAuthClient: updateGameOAuthClient(deps),
    rotateGameOAuthClientSecret,
    deleteGameOAuthClient,
  };
}
