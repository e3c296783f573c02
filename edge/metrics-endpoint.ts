/**
 * GET /metrics, the Prometheus exposition. Never public by default: on the main port it exists
 * only with a METRICS_TOKEN, and then answers only `Authorization: Bearer <token>`; on its own
 * listener (METRICS_PORT, loopback unless METRICS_HOST says otherwise) it asks the token too when
 * one is set.
 */
import Koa, { type Middleware } from "koa";
import { hashesMatch, hashSecret } from "../contract/secrets.ts";

export const metricsPath = "/metrics";

/** What a scrape returns: the text and its content type (Prometheus text format 0.0.4). */
export interface Scrape {
  contentType: string;
  body: string;
}

export interface MetricsEndpointOptions {
  scrape(): Promise<Scrape>;
  /** Required as a bearer token; undefined: no token asked (its own listener only). */
  token: string | undefined;
}

/** Whether the request carries the token, compared in constant time (as hashes of equal length). */
function bearerMatches(authorization: string | undefined, token: string): boolean {
  const match = /^Bearer ([^\s]+)$/i.exec(authorization ?? "");
  return hashesMatch(hashSecret(match?.[1] ?? ""), hashSecret(token));
}

/** Answers GET /metrics; every other request goes on. */
export function metricsEndpoint(options: MetricsEndpointOptions): Middleware {
  return async (ctx, next) => {
    if (ctx.path !== metricsPath) return next();
    ctx.state.route = metricsPath;
    ctx.set("Cache-Control", "no-store");
    if (ctx.method !== "GET" && ctx.method !== "HEAD") {
      ctx.status = 405;
      ctx.set("Allow", "GET");
      ctx.body = { code: "method_not_allowed", status: 405, message: `${metricsPath} takes GET` };
      return;
    }
    if (options.token !== undefined && !bearerMatches(ctx.get("authorization"), options.token)) {
      ctx.status = 401;
      ctx.set("WWW-Authenticate", 'Bearer realm="metrics"');
      ctx.body = { code: "unauthenticated", status: 401, message: "the metrics need METRICS_TOKEN as a bearer token" };
      return;
    }
    const scrape = await options.scrape();
    ctx.type = scrape.contentType;
    ctx.body = scrape.body;
  };
}

/** The METRICS_PORT listener's app: /metrics and nothing else. */
export function createMetricsApp(options: MetricsEndpointOptions): Koa {
  const app = new Koa();
  app.silent = true;
  app.use(metricsEndpoint(options));
  app.use((ctx) => {
    ctx.status = 404;
    ctx.body = { code: "not_found", status: 404, message: `only ${metricsPath} is served here` };
  });
  return app;
}
