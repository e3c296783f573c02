/** An access request as the API shows it, and the grant terms it drafts. */
import { orgLink } from "./links.ts";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { AccessRequestSchema, AccessRequestStatus, type AccessRequest as AccessRequestMessage } from "../../gen/outpost/organizations/v1/resources_pb.js";
import type { AccessRequest } from "../db/access-request-entities.ts";
import type { OrganizationAccess } from "../access.ts";
import { actionsToProto, limitsToProto } from "../grant-rules.ts";
import type { GrantTerms } from "./access-grant-methods.ts";

const statuses = {
  pending: AccessRequestStatus.PENDING,
  approved: AccessRequestStatus.APPROVED,
  denied: AccessRequestStatus.DENIED,
  cancelled: AccessRequestStatus.CANCELLED,
} as const;

/** The stored status of a proto one (validation refused UNSPECIFIED). */
export function requestStatusFromProto(status: AccessRequestStatus): string {
  return Object.keys(statuses).find((k) => statuses[k as keyof typeof statuses] === status) ?? "pending";
}

/** The dashboard page where managers decide requests and members see theirs. */
export const requestsPath = (access: OrganizationAccess) => orgLink(access.organization.slug, "/access");

/** The grant the request asks for. */
export function requestTerms(request: AccessRequest): GrantTerms {
  return {
    actions: request.actions,
    expiresAt: request.expiresAt ?? null,
    maxUses: request.maxUses ?? null,
    durationSeconds: request.durationSeconds ?? null,
    filePaths: request.filePaths ?? [],
  };
}

/** With its user and server loaded. */
export function accessRequestToProto(request: AccessRequest): AccessRequestMessage {
  return create(AccessRequestSchema, {
    id: request.id,
    userId: request.user.id,
    userEmail: request.user.email,
    serverId: request.server.id,
    serverName: request.server.name,
    actions: actionsToProto(request.actions),
    constraints: limitsToProto(requestTerms(request)),
    reason: request.reason,
    status: statuses[request.status as keyof typeof statuses] ?? AccessRequestStatus.UNSPECIFIED,
    createdAt: timestampFromDate(request.createdAt),
    decidedAt: request.decidedAt ? timestampFromDate(request.decidedAt) : undefined,
    decidedByUserId: request.decidedByUserId ?? "",
    decidedByEmail: request.decidedByEmail ?? "",
    decisionReason: request.decisionReason ?? "",
    accessGrantId: request.accessGrantId ?? "",
  });
}
