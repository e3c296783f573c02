/**
 * The services a script may call: each user-facing service with an `http_router` option, under
 * its router name. Agent services and the edge's own (sign-in, the issuers) are never here. The
 * keys are written out so that they are types; a test checks them against the proto options
 * (contract/services.ts), so a new public service cannot be left out unnoticed.
 */
import { ActivityService } from "../../../gen/outpost/activity/v1/activity_service_pb.js";
import { AdminService } from "../../../gen/outpost/admin/v1/admin_service_pb.js";
import { AlertsService } from "../../../gen/outpost/alerts/v1/alerts_service_pb.js";
import { AuthService } from "../../../gen/outpost/auth/v1/auth_service_pb.js";
import { ChatService } from "../../../gen/outpost/chat/v1/chat_service_pb.js";
import { IntegrationsService } from "../../../gen/outpost/integrations/v1/integrations_service_pb.js";
import { KnowledgeService } from "../../../gen/outpost/knowledge/v1/knowledge_service_pb.js";
import { NotificationsService } from "../../../gen/outpost/notifications/v1/notifications_service_pb.js";
import { OcelotService } from "../../../gen/outpost/ocelot/v1/ocelot_service_pb.js";
import { OrganizationsService } from "../../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { PwaService } from "../../../gen/outpost/pwa/v1/pwa_service_pb.js";
import { ServersService } from "../../../gen/outpost/servers/v1/servers_service_pb.js";

/** Router name → service, as under /api/http/<router>. */
export const publicServices = {
  activity: ActivityService,
  admin: AdminService,
  alerts: AlertsService,
  auth: AuthService,
  chat: ChatService,
  integrations: IntegrationsService,
  knowledge: KnowledgeService,
  notifications: NotificationsService,
  ocelot: OcelotService,
  organizations: OrganizationsService,
  pwa: PwaService,
  servers: ServersService,
} as const;

export type PublicServices = typeof publicServices;
