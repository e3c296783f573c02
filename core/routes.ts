import type { ConnectRouter, ServiceImpl } from "@connectrpc/connect";
import type { DescService } from "@bufbuild/protobuf";
import { IdentityService } from "../gen/outpost/identity/v1/identity_service_pb.js";
import { AuthService } from "../gen/outpost/auth/v1/auth_service_pb.js";
import { OrganizationsService } from "../gen/outpost/organizations/v1/organizations_service_pb.js";
import { ServersService } from "../gen/outpost/servers/v1/servers_service_pb.js";
import { ActivityService } from "../gen/outpost/activity/v1/activity_service_pb.js";
import { AdminService } from "../gen/outpost/admin/v1/admin_service_pb.js";
import { KeysService } from "../gen/outpost/keys/v1/keys_service_pb.js";
import { AgentService } from "../gen/outpost/agent/v1/agent_service_pb.js";
import { GameOAuthService } from "../gen/outpost/gameoauth/v1/game_oauth_service_pb.js";
import { AccountOAuthService } from "../gen/outpost/accountoauth/v1/account_oauth_service_pb.js";
import { IntegrationsService } from "../gen/outpost/integrations/v1/integrations_service_pb.js";
import { AlertsService } from "../gen/outpost/alerts/v1/alerts_service_pb.js";
import { NotificationsService } from "../gen/outpost/notifications/v1/notifications_service_pb.js";
import { PwaService } from "../gen/outpost/pwa/v1/pwa_service_pb.js";
import { OcelotService } from "../gen/outpost/ocelot/v1/ocelot_service_pb.js";
import { KnowledgeService } from "../gen/outpost/knowledge/v1/knowledge_service_pb.js";
import { ChatService } from "../gen/outpost/chat/v1/chat_service_pb.js";
import { Audience, serviceAudience } from "../contract/services.ts";
import type { CoreDeps } from "./deps.ts";
import { createIdentityService } from "./identity/identity-service.ts";
import { createAuthService } from "./auth/auth-service.ts";
import { createOrganizationsService } from "./organizations/organizations-service.ts";
import { createServersService } from "./servers/servers-service.ts";
import { createActivityService } from "./activity/activity-service.ts";
import { createAdminService } from "./admin/admin-service.ts";
import { createKeysService } from "./keys/keys-service.ts";
import { createAgentService } from "./agents/agent-service.ts";
import { createGameOAuthService } from "./game-oauth/game-oauth-service.ts";
import { createAccountOAuthService } from "./account-oauth/account-oauth-service.ts";
import { createIntegrationsService } from "./integrations/integrations-service.ts";
import { createAlertsService } from "./alerts/alerts-service.ts";
import { createNotificationsService } from "./notifications/notifications-service.ts";
import { createPwaService } from "./pwa/pwa-service.ts";
import { createOcelotService } from "./ocelot/ocelot-service.ts";
import { createKnowledgeService } from "./knowledge/knowledge-service.ts";
import { createChatService } from "./chat/chat-service.ts";

export interface RouteOptions {
  /** Leave out services for the edge alone (for routes served on a public path). */
  publicOnly?: boolean;
}

/** Registers core's services. */
export function createCoreRoutes(deps: CoreDeps, options: RouteOptions = {}): (router: ConnectRouter) => void {
  return (router) => {
    function register<S extends DescService>(service: S, impl: ServiceImpl<S>): void {
      if (options.publicOnly && serviceAudience(service) === Audience.INTERNAL) return;
      router.service(service, impl);
    }
    register(IdentityService, createIdentityService(deps));
    register(AuthService, createAuthService(deps));
    register(OrganizationsService, createOrganizationsService(deps));
    register(ServersService, createServersService(deps));
    register(ActivityService, createActivityService(deps));
    register(AdminService, createAdminService(deps));
    register(KeysService, createKeysService(deps));
    register(AgentService, createAgentService(deps));
    register(GameOAuthService, createGameOAuthService(deps));
    register(AccountOAuthService, createAccountOAuthService(deps));
    register(IntegrationsService, createIntegrationsService(deps));
    register(AlertsService, createAlertsService(deps));
    register(NotificationsService, createNotificationsService(deps));
    register(PwaService, createPwaService(deps));
    register(OcelotService, createOcelotService(deps));
    register(KnowledgeService, createKnowledgeService(deps));
    register(ChatService, createChatService(deps));
  };
}
