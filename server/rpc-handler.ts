/**
 * The Connect services on /api/rpc, with bounded requests. Connect reads and decompresses a
 * message before any interceptor runs, and by default takes messages of up to 4 GiB, so each
 * service here reads at most the message size the contract needs (contract/request-limits.ts).
 * `readMaxBytes` bounds a message as it arrives and again as it decompresses (zlib stops at it),
 * so a small gzip or brotli body cannot grow into a large one. A message that does not decompress
 * or does not parse is the caller's invalid_argument, never a 500.
 */
import { Code, ConnectError, type ConnectRouter, type Interceptor } from "@connectrpc/connect";
import { compressionBrotli, compressionGzip, connectNodeAdapter } from "@connectrpc/connect-node";
import type { Compression } from "@connectrpc/connect/protocol";
import { messageMaxBytes, rpcMessageMaxBytes } from "../contract/request-limits.ts";
import { malformedIsInvalid } from "./rpc-malformed.ts";

/**
 * `compression`, but a message that does not decompress (truncated, corrupt) is the caller's
 * invalid_argument, not an internal error (500). Too large stays resource_exhausted.
 */
function callerErrors(compression: Compression): Compression {
  return {
    name: compression.name,
    compress: (bytes) => compression.compress(bytes),
    async decompress(bytes, readMaxBytes) {
      try {
        return await compression.decompress(bytes, readMaxBytes);
      } catch (error) {
        const connectError = ConnectError.from(error);
        if (connectError.code === Code.ResourceExhausted || connectError.code === Code.InvalidArgument) throw connectError;
        throw new ConnectError(`the message is not valid ${compression.name} data`, Code.InvalidArgument);
      }
    },
  };
}

/** A router that registers every service with its own message limit. */
function limitedRouter(router: ConnectRouter): ConnectRouter {
  const limited: ConnectRouter = {
    get handlers() {
      return router.handlers;
    },
    service(service, implementation, options) {
      // A procedure at a time: a few take larger messages than the rest of their service (writeFile).
      for (const method of service.methods) {
        const impl = (implementation as Record<string, unknown>)[method.localName];
        router.rpc(method, impl as never, { readMaxBytes: rpcMessageMaxBytes(service.typeName, method.name), ...options });
      }
      return limited;
    },
    rpc(method, implementation, options) {
      router.rpc(method, implementation, { readMaxBytes: rpcMessageMaxBytes(method.parent.typeName, method.name), ...options });
      return limited;
    },
  };
  return limited;
}

export function createRpcHandler(routes: (router: ConnectRouter) => void, interceptors: Interceptor[]) {
  const acceptCompression = [callerErrors(compressionGzip), callerErrors(compressionBrotli)];
  return connectNodeAdapter({
    routes: (router) => {
      routes(limitedRouter(router));
      // A binary message that does not parse is the caller's invalid_argument (rpc-malformed.ts).
      const { handlers } = router;
      handlers.forEach((handler, i) => {
        handlers[i] = malformedIsInvalid(handler, acceptCompression, rpcMessageMaxBytes(handler.service.typeName, handler.method.name));
      });
    },
    interceptors,
    requestPathPrefix: "/api/rpc",
    readMaxBytes: messageMaxBytes,
    acceptCompression,
    // Unknown JSON fields are refused (invalid_argument naming them), not silently dropped.
    jsonOptions: { ignoreUnknownFields: false },
  });
}
