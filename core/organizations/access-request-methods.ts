/**
 * Access requests, part of OrganizationsService: a member asks for a grant to a server, an owner
 * or admin approves it (possibly narrowed) or denies it, the member may withdraw it while it is
 * pending. Each decision locks the request's row, so two approvals at once make one grant; the
 * requester and the managers hear of it through notifications kept in the same transaction.
 */
import { orgLink } from "./links.ts";
import type { ServiceImpl } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import { LockMode } from "@mikro-orm/core";
import type { EntityManager } from "@mikro-orm/postgresql";
import {
  ApproveAccessRequestResponseSchema,
  CancelAccessRequestResponseSchema,
  CreateAccessRequestResponseSchema,
  DenyAccessRequestResponseSchema,
  ListAccessRequestsResponseSchema,
  OrganizationsService,
} from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import type { AccessRequest as AccessRequestMessage } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { Server } from "../db/entities.ts";
import { AccessRequest } from "../db/access-request-entities.ts";
import { entityManager, requireUser, type UserCaller } from "../context.ts";
import type { CoreDeps } from "../deps.ts";
import { fail, fieldFail } from "../errors.ts";
import { holdManager, holdMember, requireMember, type OrganizationAccess } from "../access.ts";
import { accessGrantToProto } from "../convert.ts";
import { isManager } from "../roles.ts";
import { actionsFromProto, limitsFromProto, termsFromProto, wideningProblem } from "../grant-rules.ts";
import { keepNotification, notifyManagers, type Kept } from "../notifications/notify.ts";
import { decodeCursor, encodeCursor } from "../page-cursor.ts";
import { recordInOrganization } from "./organization-activity.ts";
import { writeGrant, type GrantTerms } from "./access-grant-methods.ts";
import { accessRequestToProto, requestStatusFromProto, requestTerms, requestsPath } from "./access-request-terms.ts";

type Impl = ServiceImpl<typeof OrganizationsService>;
type RequestMethods = Pick<Impl, "createAccessRequest" | "listAccessRequests" | "approveAccessRequest" | "denyAccessRequest" | "cancelAccessRequest">;
export type RequestDeps = Pick<CoreDeps, "clock" | "notifier" | "statements">;

const defaultPageSize = 30;

/** Within a transaction: the organization's request, its row locked, with its member and server. */
async function lockedRequest(tx: EntityManager, access: OrganizationAccess, id: string): Promise<AccessRequest> {
  const request = await tx.findOne(AccessRequest, { id, organization: access.organization.id }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
  if (!request) throw fail("not_found", "access request not found");
  await tx.populate(request, ["user", "server"]);
  return request;
}

/**
 * Within a transaction: the pending request an owner or admin decides, its row locked. Nobody
 * decides their own (`own` says what to do instead); a decided one says who decided it.
 */
async function requestToDecide(tx: EntityManager, caller: UserCaller, req: { organizationSlug: string; requestId: string }, own: string) {
  const access = await holdManager(tx, caller, req.organizationSlug);
  const request = await lockedRequest(tx, access, req.requestId);
  if (request.user.id === caller.user.id) throw fail("permission_denied", own);
  requirePending(request);
  return { access, request };
}

/** A decided request cannot be decided again: says who decided it. */
function requirePending(request: AccessRequest): void {
  if (request.status === "pending") return;
  const by = request.status === "cancelled" ? "the member who asked" : request.decidedByEmail;
  throw fail("failed_precondition", `this request was already ${request.status} by ${by}`);
}

/** Records the decision on the request and in the activity log. */
function decide(tx: EntityManager, caller: UserCaller, access: OrganizationAccess, request: AccessRequest, now: Date, status: "approved" | "denied" | "cancelled"): void {
  request.status = status;
  request.decidedAt = now;
  request.decidedByUserId = caller.user.id;
  request.decidedByEmail = caller.user.email;
  recordInOrganization(tx, caller, access, {
    action: `access_request.${status}`,
    targetType: "user",
    targetId: request.user.id,
    serverId: request.server.id,
    details: { server: request.server.name, email: request.user.email, ...(request.decisionReason && { reason: request.decisionReason }) },
  });
}

/** What a member asks for: a grant to a server of the organization, on these terms, and why. */
export interface AccessAsked {
  organizationSlug: string;
  serverId: string;
  terms: GrantTerms;
  reason: string;
}

/**
 * A member's request for a grant, the one way organizations/createAccessRequest and
 * servers/createFileAccessRequest make it: members only (owners and admins act on every server
 * already), one pending per member and server, recorded as access_request.created, and every
 * owner and admin told once it is committed.
 */
export async function submitAccessRequest(deps: RequestDeps, em: EntityManager, caller: UserCaller, asked: AccessAsked, now: Date): Promise<AccessRequestMessage> {
  const { terms } = asked;
  let kept: (Kept | undefined)[] = [];
  const shown = await em.transactional(async (tx) => {
    const access = await holdMember(tx, caller, asked.organizationSlug);
    if (isManager(access.role)) throw fail("failed_precondition", "owners and admins may act on every server already; requests are for members");
    const server = await tx.findOne(Server, { id: asked.serverId, organization: access.organization.id });
    if (!server) throw fail("not_found", "server not found");
    if (await tx.count(AccessRequest, { server: server.id, user: caller.user.id, status: "pending" })) {
      throw fail("request_pending", "you already have a pending request for this server; cancel it to ask again");
    }
    const request = tx.create(AccessRequest, { organization: access.organization, server, user: caller.user.id, ...terms, reason: asked.reason, status: "pending" });
    const files = terms.filePaths.join(", ");
    recordInOrganization(tx, caller, access, {
      action: "access_request.created",
      targetType: "server",
      targetId: server.id,
      serverId: server.id,
      details: { server: server.name, actions: terms.actions.join(","), ...(files && { filePaths: files }) },
    });
    await tx.flush();
    const notice = {
      kind: "access_request" as const,
      title: `${caller.user.email} asks for access to ${server.name}`,
      body: `Actions: ${terms.actions.join(", ")}.${files ? ` Files: ${files}.` : ""}${asked.reason ? ` Reason: ${asked.reason}` : ""}`,
      link: requestsPath(access),
      organizationId: access.organization.id,
    };
    kept = await notifyManagers(deps.statements.on(tx), notice, now);
    await tx.populate(request, ["user", "server"]);
    return accessRequestToProto(request);
  });
  deps.notifier.announce(kept);
  return shown;
}

const createAccessRequest =
  (deps: RequestDeps): Impl["createAccessRequest"] =>
  async (req, ctx) => {
    const caller = requireUser(ctx);
    const now = deps.clock.now();
    const asked = { organizationSlug: req.organizationSlug, serverId: req.serverId, terms: termsFromProto(req, now), reason: req.reason };
    const accessRequest = await submitAccessRequest(deps, entityManager(ctx), caller, asked, now);
    return create(CreateAccessRequestResponseSchema, { accessRequest });
  };

const listAccessRequests: Impl["listAccessRequests"] = async (req, ctx) => {
  const em = entityManager(ctx);
  const caller = requireUser(ctx);
  const access = await requireMember(em, caller, req.organizationSlug);
  if (!isManager(access.role) && req.userId !== undefined && req.userId !== caller.user.id) {
    throw fail("permission_denied", "a member sees only their own access requests");
  }
  const userId = isManager(access.role) ? req.userId : caller.user.id;
  const after = req.cursor === undefined ? undefined : decodeCursor(req.cursor);
  const limit = req.limit ?? defaultPageSize;
  const where = {
    organization: access.organization.id,
    ...(userId !== undefined && { user: userId }),
    ...(req.serverId !== undefined && { server: req.serverId }),
    ...(req.status !== undefined && { status: requestStatusFromProto(req.status) }),
    ...(after && { $or: [{ createdAt: { $lt: after.createdAt } }, { createdAt: after.createdAt, id: { $lt: after.id } }] }),
  };
  const rows = await em.find(AccessRequest, where, { populate: ["user", "server"], orderBy: { createdAt: "desc", id: "desc" }, limit: limit + 1 });
  const page = rows.slice(0, limit);
  return create(ListAccessRequestsResponseSchema, {
    accessRequests: page.map(accessRequestToProto),
    nextCursor: rows.length > limit ? encodeCursor(page.at(-1)!) : "",
  });
};

const approveAccessRequest =
  (deps: RequestDeps): Impl["approveAccessRequest"] =>
  async (req, ctx) => {
    const caller = requireUser(ctx);
    const now = deps.clock.now();
    let kept: Kept | undefined;
    const response = await entityManager(ctx).transactional(async (tx) => {
      const { access, request } = await requestToDecide(tx, caller, req, "you cannot approve your own access request; another owner or admin must");
      const draft = requestTerms(request);
      const limits = req.constraints
        ? limitsFromProto(req.constraints, now)
        : { expiresAt: draft.expiresAt, maxUses: draft.maxUses, durationSeconds: draft.durationSeconds, filePaths: draft.filePaths };
      const terms = { actions: req.actions.length ? actionsFromProto(req.actions) : draft.actions, ...limits };
      const widened = wideningProblem(draft, terms);
      if (widened) throw fieldFail([{ field: widened.field, message: `an approval may only narrow a request: ${widened.message}` }]);
      if (terms.expiresAt && terms.expiresAt <= now)
        throw fail("failed_precondition", "the access this request asked for has already expired; the member must ask again");
      const grant = await writeGrant(tx, caller, access, { userId: request.user.id, serverId: request.server.id, replace: true }, terms);
      request.accessGrantId = grant.id;
      decide(tx, caller, access, request, now, "approved");
      kept = await keepNotification(
        deps.statements.on(tx),
        {
          userId: request.user.id,
          kind: "access_request",
          title: `Your access to ${request.server.name} was approved`,
          body: `${caller.user.email} approved it with: ${terms.actions.join(", ")}.`,
          link: orgLink(access.organization.slug, `/servers/${request.server.id}`),
          organizationId: access.organization.id,
        },
        now,
      );
      await tx.flush();
      return create(ApproveAccessRequestResponseSchema, { accessRequest: accessRequestToProto(request), accessGrant: accessGrantToProto(grant, now) });
    });
    deps.notifier.announce([kept]);
    return response;
  };

const denyAccessRequest =
  (deps: RequestDeps): Impl["denyAccessRequest"] =>
  async (req, ctx) => {
    const caller = requireUser(ctx);
    const now = deps.clock.now();
    let kept: Kept | undefined;
    const response = await entityManager(ctx).transactional(async (tx) => {
      const { access, request } = await requestToDecide(tx, caller, req, "you cannot decide your own access request; cancel it instead");
      request.decisionReason = req.reason.trim();
      decide(tx, caller, access, request, now, "denied");
      kept = await keepNotification(
        deps.statements.on(tx),
        {
          userId: request.user.id,
          kind: "access_request",
          title: `Your access request for ${request.server.name} was denied`,
          body: `${caller.user.email}: ${request.decisionReason}`,
          link: requestsPath(access),
          organizationId: access.organization.id,
        },
        now,
      );
      await tx.flush();
      return create(DenyAccessRequestResponseSchema, { accessRequest: accessRequestToProto(request) });
    });
    deps.notifier.announce([kept]);
    return response;
  };

const cancelAccessRequest =
  (deps: RequestDeps): Impl["cancelAccessRequest"] =>
  async (req, ctx) => {
    const caller = requireUser(ctx);
    return entityManager(ctx).transactional(async (tx) => {
      const access = await holdMember(tx, caller, req.organizationSlug);
      const request = await lockedRequest(tx, access, req.requestId);
      if (request.user.id !== caller.user.id) {
        if (!isManager(access.role)) throw fail("not_found", "access request not found");
        throw fail("permission_denied", "only the member who asked can cancel a request; deny it instead");
      }
      requirePending(request);
      decide(tx, caller, access, request, deps.clock.now(), "cancelled");
      await tx.flush();
      return create(CancelAccessRequestResponseSchema, { accessRequest: accessRequestToProto(request) });
    });
  };

export function accessRequestMethods(deps: RequestDeps): RequestMethods {
  return {
    createAccessRequest: createAccessRequest(deps),
    listAccessRequests,
    approveAccessRequest: approveAccessRequest(deps),
    denyAccessRequest: denyAccessRequest(deps),
    cancelAccessRequest: cancelAccessRequest(deps),
  };
}
