/**
 * /api/http/<router>/<procedure>: the HTTP API, generated from the contract. Every service with an
 * `http_router` option is a router and every method a procedure (its lowerCamelCase name);
 * NO_SIDE_EFFECTS methods are GET queries with individual query parameters, every other method is
 * a POST with a plain JSON body. A new RPC appears here without edge code.
 */
import type { DescMethod, DescMethodUnary, DescService, JsonValue } from "@bufbuild/protobuf";
import { MethodOptions_IdempotencyLevel } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import type { Context, Middleware } from "koa";
import { secretPrefixes } from "../../contract/secrets.ts";
import { idempotencyKeyHeader, idempotentReplayedHeader } from "../../contract/credentials.ts";
import { httpResponseField, httpRouter, services } from "../../contract/services.ts";
import { errorBody, HttpError, jsonName, violationDetails, isUnexplainedFailure } from "../errors.ts";
import { untilClientGone, type CoreCalls } from "../core-calls.ts";
import { messageFromApiJson, messageToApiJson } from "./json.ts";
import { queryToJson } from "./query.ts";
import { readJsonObject } from "./body.ts";
import { edgeBodyMaxBytes } from "../body-limits.ts";

/** Every router name the API will ever have; those without a service yet answer 404. */
export const reservedRouters = [
  "activity",
  "admin",
  "alerts",
  "auth",
  "chat",
  "integrations",
  "knowledge",
  "notifications",
  "ocelot",
  "organizations",
  "pwa",
  "servers",
] as const;

export const httpApiPrefix = "/api/http/";

export interface Procedure {
  router: string;
  name: string;
  service: DescService;
  method: DescMethodUnary;
  /** GET for queries, POST for everything else. */
  httpMethod: "GET" | "POST";
  /** The JSON name of the response field that is the whole body, if any. */
  responseField: string | undefined;
}

/** The JSON name of the method's whole-body response field, if it names one. */
function responseFieldJsonName(method: DescMethod): string | undefined {
  const name = httpResponseField(method);
  if (!name) return undefined;
  const field = method.output.fields.find((f) => f.name === name || f.jsonName === name);
  if (!field) throw new Error(`${method.parent.typeName}.${method.name}: http_response_field "${name}" is not a field of ${method.output.typeName}`);
  return field.jsonName;
}

export function isQuery(method: DescMethod): boolean {
  return method.idempotency === MethodOptions_IdempotencyLevel.NO_SIDE_EFFECTS;
}

/** The router map: router name → procedure name → procedure. Refuses an unreserved router name. */
export function createProcedureMap(exposed: readonly DescService[] = services): Map<string, Map<string, Procedure>> {
  const map = new Map<string, Map<string, Procedure>>(reservedRouters.map((name) => [name, new Map()]));
  for (const service of exposed) {
    const router = httpRouter(service);
    if (!router) continue;
    const procedures = map.get(router);
    if (!procedures) throw new Error(`${service.typeName}: http_router "${router}" is not a reserved router name`);
    for (const method of service.methods) {
      if (method.methodKind !== "unary") continue; // streams are not part of the HTTP API
      procedures.set(method.localName, {
        router,
        name: method.localName,
        service,
        method: method as DescMethodUnary,
        httpMethod: isQuery(method) ? "GET" : "POST",
        responseField: responseFieldJsonName(method),
      });
    }
  }
  return map;
}

/** Query parameters that would put a credential in a URL (and so in logs and histories). */
const credentialParams = /^(api[-_]?key|key|x-api-key|token|access[-_]?token|session|outpost_session|authorization)$/i;
/** The secrets that authenticate a caller (of the HTTP API or an agent), whose prefix in a URL is refused. */
const credentialPrefixes = [secretPrefixes.apiKey, secretPrefixes.session, secretPrefixes.agentKey];

export function refuseCredentialsInUrl(params: URLSearchParams): void {
  for (const [name, value] of params) {
    if (credentialParams.test(name) || credentialPrefixes.some((prefix) => value.startsWith(prefix))) {
      throw new ConnectError("credentials are not accepted in the URL; send the API key in the X-API-Key header", Code.Unauthenticated);
    }
  }
}

function apiInput(procedure: Procedure, json: JsonValue) {
  try {
    return messageFromApiJson(procedure.method.input, json);
  } catch (error) {
    if (error instanceof ConnectError) throw error;
    const text = (error as Error).message;
    const field = /cannot decode field [\w.]+\.(\w+) from JSON: (.*)$/.exec(text);
    const key = /key "([^"]+)" is unknown/.exec(text);
    const message = key ? `unknown field: ${key[1]}` : field ? `${jsonName(field[1])}: ${field[2]}` : text.replace(/^cannot decode message [\w.]+ from JSON: /, "");
    throw new ConnectError(message, Code.InvalidArgument);
  }
}

/** A mutation's Idempotency-Key, passed on to core (core/idempotency), which ignores it on queries. */
function idempotencyHeaders(ctx: Context): Headers | undefined {
  // Present but empty is passed on too: core refuses it rather than running without a key.
  const key = ctx.req.headers[idempotencyKeyHeader];
  return typeof key === "string" ? new Headers({ [idempotencyKeyHeader]: key }) : undefined;
}

export interface HttpApiOptions {
  /** Core, called as the request's caller (its session cookie or X-API-Key). */
  calls: CoreCalls;
  /** Largest accepted POST body (default edgeBodyMaxBytes of the path: 64 KiB, more for notes; a larger one is refused before this reads it). */
  bodyLimit?: number;
  /** Adds headers for an error (e.g. rate-limit headers); optional. */
  errorHeaders?: (error: unknown) => Record<string, string> | undefined;
}

export function createHttpApi(options: HttpApiOptions): Middleware {
  const procedures = createProcedureMap();

  return async (ctx, next) => {
    if (!ctx.path.startsWith(httpApiPrefix)) return next();
    ctx.set("Cache-Control", "no-store");
    let gone: AbortSignal | undefined;
    try {
      const [routerName, procedureName, ...rest] = ctx.path.slice(httpApiPrefix.length).split("/");
      const router = procedures.get(routerName);
      if (!router) throw new ConnectError(`no router named "${routerName}"`, Code.NotFound);
      const procedure = router.get(procedureName);
      if (!procedure || rest.length) throw new ConnectError(`no procedure ${routerName}/${procedureName}`, Code.NotFound);
      ctx.state.route = `${httpApiPrefix}${procedure.router}/${procedure.name}`;
      if (ctx.method !== procedure.httpMethod) {
        throw new HttpError(405, "method_not_allowed", `${routerName}/${procedureName} takes ${procedure.httpMethod}`, {
          Allow: procedure.httpMethod,
        });
      }
      const params = new URLSearchParams(ctx.querystring);
      refuseCredentialsInUrl(params);
      if (ctx.get("authorization")) {
        throw new ConnectError("OAuth access tokens do not authenticate the HTTP API; send an API key in the X-API-Key header", Code.Unauthenticated);
      }
      if (procedure.httpMethod === "POST" && params.size) throw new ConnectError("a POST takes its input in the JSON body, not the URL", Code.InvalidArgument);
      const input = apiInput(
        procedure,
        procedure.httpMethod === "GET" ? queryToJson(procedure.method.input, params) : await readJsonObject(ctx, options.bodyLimit ?? edgeBodyMaxBytes(ctx.path)),
      );
      // A POST may wait on something slow (the assistant's model): the client going away ends it.
      gone = procedure.httpMethod === "POST" ? untilClientGone(ctx) : undefined;
      const response = await options.calls.transport(ctx).unary(procedure.method, gone, undefined, idempotencyHeaders(ctx), input);
      const json = messageToApiJson(procedure.method.output, response.message);
      if (response.header.get(idempotentReplayedHeader)) ctx.set("Idempotent-Replayed", "true");
      ctx.status = 200;
      ctx.body = procedure.responseField ? (json as { [key: string]: JsonValue })[procedure.responseField] : json;
    } catch (error) {
      // A client that went away is answered by no one, and its call's cancellation is no failure.
      if (gone?.aborted) return;
      answerApiError(ctx, error, options.errorHeaders);
    }
  };
}

/** An HTTP API error as every route answers it: its status, JSON body and field details, logged when it is Outpost's own fault. */
export function answerApiError(ctx: Context, error: unknown, errorHeaders?: HttpApiOptions["errorHeaders"]): void {
  const body = errorBody(error, ctx.state.requestId);
  if (isUnexplainedFailure(error)) ctx.state.log.error({ err: error }, "HTTP API request failed");
  const details = violationDetails(error);
  const headers = { ...(error instanceof HttpError ? error.headers : {}), ...errorHeaders?.(error) };
  if (error instanceof ConnectError && error.metadata.get(idempotentReplayedHeader)) headers["Idempotent-Replayed"] = "true";
  for (const [name, value] of Object.entries(headers)) ctx.set(name, value);
  ctx.status = body.status;
  ctx.body = details ? { ...body, details } : body;
}
