/** The small routing pieces both issuers' Koa apps are made of. */
import type { Context, Middleware } from "koa";

export type Handler = (ctx: Context) => Promise<void> | void;
export type Routes = Record<string, Partial<Record<"GET" | "POST", Handler>>>;

/** Dispatches on exact paths; a known path with another method is 405 with Allow. */
export function routes(table: Routes): Middleware {
  return async (ctx, next) => {
    const route = table[ctx.path];
    if (!route) return next();
    // One of the table's own paths: a fixed set, fit for a metrics label.
    ctx.state.route = ctx.path;
    const method = ctx.method === "HEAD" ? "GET" : (ctx.method as "GET" | "POST");
    const handler = route[method];
    if (!handler) {
      ctx.status = 405;
      ctx.set("Allow", Object.keys(route).join(", "));
      ctx.body = { error: "invalid_request", error_description: `${ctx.path} does not take ${ctx.method}` };
      return;
    }
    await handler(ctx);
  };
}

/** Runs `middleware` only for these exact paths. */
export function onlyFor(paths: readonly string[], middleware: Middleware): Middleware {
  const set = new Set(paths);
  return (ctx, next) => (set.has(ctx.path) ? middleware(ctx, next) : next());
}

/** Anything thrown becomes a 500 `{error: "server_error"}` with no detail; the cause goes to the log. */
export function plainErrors(): Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (error) {
      ctx.state.log.error({ err: error }, "issuer request failed");
      ctx.status = 500;
      ctx.set("Cache-Control", "no-store");
      ctx.body = { error: "server_error" };
    }
  };
}
