/**
 * The dashboard's core: Connect clients made by the edge's one way to call core
 * (edge/core-calls.ts), so each call carries the browser's session (from its HttpOnly cookie),
 * address and request id, as /api/rpc would; and the API's refusals of a form, field by field.
 */
import type { Context } from "koa";
import { Code, ConnectError, type Client } from "@connectrpc/connect";
import { ViolationsSchema } from "@bufbuild/protovalidate/gen/buf/validate/validate_pb.js";
import { ErrorInfoSchema } from "../../gen/outpost/errors/v1/errors_pb.js";
import { jsonName } from "../errors.ts";
import type { CoreCalls } from "../core-calls.ts";
import { AuthService } from "../../gen/outpost/auth/v1/auth_service_pb.js";
import { OrganizationsService } from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { ServersService } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { ActivityService } from "../../gen/outpost/activity/v1/activity_service_pb.js";
import { AdminService } from "../../gen/outpost/admin/v1/admin_service_pb.js";
import { IntegrationsService } from "../../gen/outpost/integrations/v1/integrations_service_pb.js";
import { AlertsService } from "../../gen/outpost/alerts/v1/alerts_service_pb.js";
import { NotificationsService } from "../../gen/outpost/notifications/v1/notifications_service_pb.js";
import { PwaService } from "../../gen/outpost/pwa/v1/pwa_service_pb.js";
import { OcelotService } from "../../gen/outpost/ocelot/v1/ocelot_service_pb.js";
import { KnowledgeService } from "../../gen/outpost/knowledge/v1/knowledge_service_pb.js";
import { ChatService } from "../../gen/outpost/chat/v1/chat_service_pb.js";

export interface Core {
  auth: Client<typeof AuthService>;
  organizations: Client<typeof OrganizationsService>;
  servers: Client<typeof ServersService>;
  activity: Client<typeof ActivityService>;
  admin: Client<typeof AdminService>;
  integrations: Client<typeof IntegrationsService>;
  alerts: Client<typeof AlertsService>;
  notifications: Client<typeof NotificationsService>;
  pwa: Client<typeof PwaService>;
  ocelot: Client<typeof OcelotService>;
  knowledge: Client<typeof KnowledgeService>;
  chat: Client<typeof ChatService>;
}

/** Core as the caller of this request (the dashboard checks first that it has a session cookie). */
export function coreFor(calls: CoreCalls, ctx: Context): Core {
  return {
    auth: calls.client(ctx, AuthService),
    organizations: calls.client(ctx, OrganizationsService),
    servers: calls.client(ctx, ServersService),
    activity: calls.client(ctx, ActivityService),
    admin: calls.client(ctx, AdminService),
    integrations: calls.client(ctx, IntegrationsService),
    alerts: calls.client(ctx, AlertsService),
    notifications: calls.client(ctx, NotificationsService),
    pwa: calls.client(ctx, PwaService),
    ocelot: calls.client(ctx, OcelotService),
    knowledge: calls.client(ctx, KnowledgeService),
    chat: calls.client(ctx, ChatService),
  };
}

export function hasCode(error: unknown, code: Code): boolean {
  return error instanceof ConnectError && error.code === code;
}

/** What went wrong with a form, as the API said it: messages by field, and for the form as a whole. */
export interface FormErrors {
  /** By the API's (JSON) field name; list fields' messages are prefixed "Line n:". */
  fields: Record<string, string[]>;
  form: string[];
}

/** Every message of a refused form, the form's first, as one list (for a page without the form's fields). */
export function allMessages(errors: FormErrors): string[] {
  return [...errors.form, ...Object.values(errors.fields).flat()];
}

/**
 * Codes whose message the user can act on; anything else is the page's error, not the form's. Not
 * permission_denied: the pages do not draw a form for someone it would refuse (a role changed
 * while the page was open, a form posted directly), so that is a 403 page saying why.
 */
const formCodes = new Set([Code.InvalidArgument, Code.OutOfRange, Code.AlreadyExists, Code.FailedPrecondition, Code.NotFound, Code.ResourceExhausted]);

/**
 * The API's answer to a form's call, field by field: buf.validate violations name their field
 * (core's own field errors carry the same detail); a domain error whose reason belongs to one field
 * (`reasonFields`, e.g. slug_taken → slug) goes next to it; anything else is the form's. Undefined
 * when the error is not about the input (unauthenticated, internal…): the caller rethrows it.
 */
export function formErrors(error: unknown, reasonFields: Record<string, string> = {}): FormErrors | undefined {
  if (!(error instanceof ConnectError) || !formCodes.has(error.code)) return undefined;
  const result: FormErrors = { fields: {}, form: [] };
  const [violations] = error.findDetails(ViolationsSchema);
  for (const v of violations?.violations ?? []) {
    const elements = v.field?.elements ?? [];
    const indexed = elements.find((e) => e.subscript.case === "index");
    const field = elements[0] && jsonName(elements[0].fieldName ?? "");
    const text = indexed ? `Line ${Number(indexed.subscript.value) + 1}: ${v.message}` : v.message;
    if (field) (result.fields[field] ??= []).push(text);
    else result.form.push(text);
  }
  if (violations?.violations.length) return result;
  const [info] = error.findDetails(ErrorInfoSchema);
  const reasonField = info?.reason ? reasonFields[info.reason] : undefined;
  if (reasonField) result.fields[reasonField] = [error.rawMessage];
  else result.form.push(error.rawMessage);
  return result;
}

/** The form errors of `error`, or the error thrown again when it is not about the input. */
export function formErrorsOrThrow(error: unknown, reasonFields?: Record<string, string>): FormErrors {
  const errors = formErrors(error, reasonFields);
  if (!errors) throw error;
  return errors;
}
