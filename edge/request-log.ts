import { randomUUID } from "node:crypto";
import type { Context, Middleware } from "koa";
import type { Logger } from "pino";
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Span } from "@opentelemetry/api";

const acceptableId = /^[\w.-]{8,64}$/;

declare module "koa" {
  interface DefaultState {
    requestId: string;
    log: Logger;
    /**
     * The route template that answered (`/oauth2/token`, `/api/http/servers/listServers`), set by
     * the piece that recognised the request: a label of a fixed set, never a path with ids in it.
     */
    route?: string;
  }
}

/** One finished response, as the request metrics count it. */
export interface RequestFacts {
  /** Which listener: the account edge or the Game OAuth issuer. */
  server: "account" | "game";
  method: string;
  /** A route template, `unmatched` (nothing answered: a 404) or `other`; never a raw path. */
  route: string;
  status: number;
  seconds: number;
}

/** Where the edge reports each response (the composition root keeps them as Prometheus metrics). */
export interface RequestMetrics {
  request(facts: RequestFacts): void;
}

export interface RequestLogOptions {
  server: RequestFacts["server"];
  metrics?: RequestMetrics;
}

/** Methods as they are; anything else one label, so a client cannot invent label values. */
const knownMethods = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);

/**
 * The route label of a finished request: what the answering piece set, else @koa/router's matched
 * template (the dashboard, the account pages), else `unmatched` for a 404 and `other` for the rest
 * (static assets and refusals before routing).
 */
export function routeLabel(ctx: Context): string {
  if (ctx.state.route) return ctx.state.route;
  const matched = (ctx as { _matchedRoute?: unknown })._matchedRoute;
  if (typeof matched === "string") return matched;
  return ctx.status === 404 ? "unmatched" : "other";
}

/** The request's span, named and described once its route and status are known. */
function endSpan(span: Span, method: string, route: string, status: number, aborted: boolean | undefined): void {
  span.updateName(`${method} ${route}`);
  // unmatched and other are labels, not templates: the span says no route rather than a false one.
  if (route !== "unmatched" && route !== "other") span.setAttribute("http.route", route);
  span.setAttribute("http.response.status_code", status);
  if (aborted) span.setAttribute("outpost.aborted", true);
  // A server span fails on 5xx only: a 4xx is the client's mistake, answered as it should be.
  if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
}

/**
 * Gives every request an id (the caller's X-Request-Id when it is sane, else a new one), echoes
 * it, and logs one structured line when the response is over, which the request metrics count
 * too. Only the path is logged, never the query string, so a secret someone put in a URL does not
 * reach the log.
 */
export function requestLog(logger: Logger, options: RequestLogOptions = { server: "account" }): Middleware {
  const tracer = trace.getTracer("outpost.edge");
  return async (ctx, next) => {
    const incoming = ctx.get("x-request-id");
    const requestId = acceptableId.test(incoming) ? incoming : randomUUID();
    const method = knownMethods.has(ctx.method) ? ctx.method : "other";
    // A span per request (docs/operations.md, Tracing), continuing a proxy's W3C traceparent. With
    // tracing off the API is a no-op: the span records nothing and the log line stays as it was.
    const parent = propagation.extract(ROOT_CONTEXT, ctx.req.headers);
    const span = tracer.startSpan(
      method,
      { kind: SpanKind.SERVER, attributes: { "http.request.method": method === "other" ? "_OTHER" : method, "outpost.request_id": requestId } },
      parent,
    );
    const ids = span.isRecording() ? { trace_id: span.spanContext().traceId, span_id: span.spanContext().spanId } : undefined;
    const log = logger.child({ requestId, ...ids });
    ctx.state.requestId = requestId;
    ctx.state.log = log;
    ctx.res.setHeader("x-request-id", requestId);
    const started = performance.now();
    // "close" rather than "finish": a response the client left before it ended (a stream, a slow
    // answer) is logged and counted too, marked aborted.
    ctx.res.once("close", () => {
      const ms = performance.now() - started;
      const status = ctx.res.statusCode;
      const route = routeLabel(ctx);
      const aborted = !ctx.res.writableFinished || undefined;
      log.info({ method: ctx.method, path: ctx.path, route, status, ms: Math.round(ms), aborted }, "request");
      options.metrics?.request({ server: options.server, method, route, status, seconds: ms / 1000 });
      endSpan(span, method, route, status, aborted);
    });
    // Everything the request does (core's calls, their statements) runs under its span.
    await context.with(trace.setSpan(parent, span), next);
  };
}
