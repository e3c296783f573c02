/**
 * The services of the contract and what their proto options say about them. Core, the edge and
 * the OpenAPI generator all read the same facts from here.
 */
import { getOption, type DescMethod, type DescService } from "@bufbuild/protobuf";
import {
  Audience,
  audience,
  http_response_field,
  http_router,
  organization_scoped,
  outside_organization,
  rate_limit_by_client_ip,
  server_scoped,
} from "../gen/outpost/options/v1/options_pb.js";
import { ActivityService } from "../gen/outpost/activity/v1/activity_service_pb.js";
import { AgentService } from "../gen/outpost/agent/v1/agent_service_pb.js";
import { AdminService } from "../gen/outpost/admin/v1/admin_service_pb.js";
import { AuthService } from "../gen/outpost/auth/v1/auth_service_pb.js";
import { IdentityService } from "../gen/outpost/identity/v1/identity_service_pb.js";
import { KeysService } from "../gen/outpost/keys/v1/keys_service_pb.js";
import { OrganizationsService } from "../gen/outpost/organizations/v1/organizations_service_pb.js";
import { ServersService } from "../gen/outpost/servers/v1/servers_service_pb.js";
import { GameOAuthService } from "../gen/outpost/gameoauth/v1/game_oauth_service_pb.js";
import { AccountOAuthService } from "../gen/outpost/accountoauth/v1/account_oauth_service_pb.js";
import { IntegrationsService } from "../gen/outpost/integrations/v1/integrations_service_pb.js";
import { AlertsService } from "../gen/outpost/alerts/v1/alerts_service_pb.js";
import { NotificationsService } from "../gen/outpost/notifications/v1/notifications_service_pb.js";
import { PwaService } from "../gen/outpost/pwa/v1/pwa_service_pb.js";
import { OcelotService } from "../gen/outpost/ocelot/v1/ocelot_service_pb.js";
import { KnowledgeService } from "../gen/outpost/knowledge/v1/knowledge_service_pb.js";
import { ChatService } from "../gen/outpost/chat/v1/chat_service_pb.js";

export { Audience };

/** Every service in the contract. */
export const services: readonly DescService[] = [
  IdentityService,
  AuthService,
  OrganizationsService,
  ServersService,
  ActivityService,
  AdminService,
  KeysService,
  AgentService,
  GameOAuthService,
  AccountOAuthService,
  IntegrationsService,
  AlertsService,
  NotificationsService,
  PwaService,
  OcelotService,
  KnowledgeService,
  ChatService,
];

const audiences = new WeakMap<DescService, Audience>();

/**
 * Who may call the service (unspecified means signed-in users). Read once per service: the option
 * lookup walks the descriptor's extensions, and interceptors ask on every call.
 */
export function serviceAudience(service: DescService): Audience {
  let known = audiences.get(service);
  if (known === undefined) {
    const value = getOption(service, audience);
    known = value === Audience.UNSPECIFIED ? Audience.USER : value;
    audiences.set(service, known);
  }
  return known;
}

/** The service's router name under /api/http, or undefined if it is not exposed there. */
export function httpRouter(service: DescService): string | undefined {
  return getOption(service, http_router) || undefined;
}

/** The response field that is the whole HTTP API body, if the method names one. */
export function httpResponseField(method: DescMethod): string | undefined {
  return getOption(method, http_response_field) || undefined;
}

const limitedByIp = new WeakMap<DescMethod, boolean>();

/** Whether core limits the method's calls per client IP although its service is for the edge alone (read once per method). */
export function rateLimitedByClientIp(method: DescMethod): boolean {
  let known = limitedByIp.get(method);
  if (known === undefined) limitedByIp.set(method, (known = getOption(method, rate_limit_by_client_ip)));
  return known;
}

const scoped = new WeakMap<DescMethod, boolean>();

/**
 * Whether the method is about one organization, so an organization API key may call it (confined
 * to its organization by core/access.ts): its service is organization_scoped and the method is not
 * marked outside_organization. Read once per method.
 */
export function organizationScoped(method: DescMethod): boolean {
  let known = scoped.get(method);
  if (known === undefined) {
    known = getOption(method.parent, organization_scoped) && !getOption(method, outside_organization);
    scoped.set(method, known);
  }
  return known;
}

const aboutOneServer = new WeakMap<DescMethod, boolean>();

/**
 * Whether the method's first step is the access check on the server its request's server_id
 * names, so core reads that access with the caller's credential (proto option server_scoped).
 * Read once per method.
 */
export function serverScoped(method: DescMethod): boolean {
  let known = aboutOneServer.get(method);
  if (known === undefined) aboutOneServer.set(method, (known = method.methodKind === "unary" && getOption(method, server_scoped)));
  return known;
}
