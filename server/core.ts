import type { Interceptor, Transport } from "@connectrpc/connect";
import { createInProcessTransport } from "../core/transport.ts";
import { createCoreRoutes } from "../core/routes.ts";
import { createCoreInterceptors } from "../core/interceptors/index.ts";
import type { CoreDeps } from "../core/deps.ts";

export interface Core {
  /** Every service (in-process callers: the edge, the CLI). */
  routes: ReturnType<typeof createCoreRoutes>;
  /** The services that may be served on a public path (/api/rpc). */
  publicRoutes: ReturnType<typeof createCoreRoutes>;
  interceptors: Interceptor[];
  /** An in-process transport to every service; `clientInterceptors` run on the calling side. */
  transport(clientInterceptors?: Interceptor[]): Transport;
}

export function createCore(deps: CoreDeps): Core {
  const routes = createCoreRoutes(deps);
  const interceptors = createCoreInterceptors(deps);
  return {
    routes,
    publicRoutes: createCoreRoutes(deps, { publicOnly: true }),
    interceptors,
    // Messages cross as objects, not protobuf bytes (core/transport.ts); same interceptors, same errors.
    transport: (clientInterceptors = []) => createInProcessTransport(routes, { router: { interceptors }, transport: { interceptors: clientInterceptors } }),
  };
}
