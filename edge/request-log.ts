import { randomUUID } from "node:crypto";
import type { Middleware } from "koa";
import type { Logger } from "pino";

const acceptableId = /^[\w.-]{8,64}$/;

declare module "koa" {
  interface DefaultState {
    requestId: string;
    log: Logger;
  }
}

/**
 * Gives every request an id (the caller's X-Request-Id when it is sane, else a new one), echoes
 * it, and logs one structured line when the response is done. Only the path is logged, never the
 * query string, so a secret someone put in a URL does not reach the log.
 */
export function requestLog(logger: Logger): Middleware {
  return async (ctx, next) => {
    const incoming = ctx.get("x-request-id");
    const requestId = acceptableId.test(incoming) ? incoming : randomUUID();
    const log = logger.child({ requestId });
    ctx.state.requestId = requestId;
    ctx.state.log = log;
    ctx.res.setHeader("x-request-id", requestId);
    const started = performance.now();
    ctx.res.once("finish", () => {
      log.info(
        { method: ctx.method, path: ctx.path, status: ctx.res.statusCode, ms: Math.round(performance.now() - started) },
        "request",
      );
    });
    await next();
  };
}
