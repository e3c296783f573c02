import type { Interceptor } from "@connectrpc/connect";
import type { Orm } from "../db/orm.ts";
import { entityManagerKey } from "../context.ts";

/** Gives each request its own EntityManager (identity map), so no state leaks between requests. */
export function createContextInterceptor(orm: Orm): Interceptor {
  return (next) => async (req) => {
    req.contextValues.set(entityManagerKey, orm.em.fork());
    return next(req);
  };
}
