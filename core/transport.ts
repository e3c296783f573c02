/**
 * The in-process transport to core (the edge and the CLI call core through it). A drop-in for
 * Connect's createRouterTransport that hands unary messages across as objects instead of encoding
 * them to protobuf binary and back through a simulated HTTP exchange (request and response bodies
 * as async iterables, URL parsing, two abort controllers and their AbortError per call).
 *
 * What a caller and a handler see is what they saw through the router transport:
 * - the client's interceptors run first, then core's, in their order, around the implementation;
 * - core gets its own copy of the request message and the caller its own copy of the response
 *   (cloned, as the binary round trip copied them), the request headers as the Connect client sends
 *   them (content-type, connect-protocol-version, user-agent), fresh context values, and the
 *   request URL `https://in-memory/<service>/<method>`;
 * - an error reaches the caller exactly as over the wire: the handler's error (or `internal` for
 *   anything that is not a ConnectError) is written as Connect's JSON error body and parsed back,
 *   so its code, message, details (as wire details) and metadata are the same;
 * - a handler's `ctx.signal` is aborted when the call ends (with the error when it failed), or when
 *   the caller's AbortSignal is (`canceled`); it is created only when someone reads it, so a call
 *   whose code never looks costs no AbortController.
 *
 * Streaming calls (a download's pieces, an upload's, a sign-in's live status) cross as objects too:
 * the caller's side is Connect's own (runStreamingCall: the client's interceptors, the signal, the
 * request messages normalized), and so is core's (transformInvokeImplementation: core's
 * interceptors, one request for a server stream, the handler's headers and trailers); only the
 * encoding, enveloping and parsing between them is left out. A 1 MiB piece of a file is then
 * handed on, not copied four times. What differs from the wire:
 * - a streamed message is the sender's own object, not a copy: neither side changes a message it
 *   sent or received (none does);
 * - the handler runs only as far as the caller reads (a message at a time), where HTTP would let
 *   it run a few messages ahead into its buffers;
 * - a caller that aborts also ends the handler's generator where it waits (its `finally` runs),
 *   where the router transport leaves it suspended;
 * - once the call is aborted, the handler's reads of its request messages fail with the reason
 *   rather than end, as a cut HTTP body does (an upload cut short is never taken as whole).
 *
 * Calls with a timeout take the router transport itself, where deadlines behave as Connect
 * implements them. The one thing a unary response lacks is the `content-length` header of the
 * encoded body, which no in-process caller reads.
 */
import { clone, create, type DescMessage, type DescMethodUnary } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  appendHeaders,
  createContextValues,
  createMethodImplSpec,
  createRouterTransport,
  createServiceImplSpec,
  type ConnectRouter,
  type ConnectRouterOptions,
  type ContextValues,
  type HandlerContext,
  type Interceptor,
  type MethodImplSpec,
  type StreamRequest,
  type Transport,
  type UnaryRequest,
  type UnaryResponse,
} from "@connectrpc/connect";
import { createMethodUrl, mergeNonProtocolHeaders, runStreamingCall } from "@connectrpc/connect/protocol";
import { serveStream, untilAborted } from "./transport-streams.ts";
import {
  codeToHttpStatus,
  contentTypeUnaryJson,
  contentTypeUnaryProto,
  errorFromJsonBytes,
  errorToJsonBytes,
  headerContentType,
  headerUnaryContentLength,
  requestHeader,
  trailerDemux,
  trailerMux,
  validateResponse,
} from "@connectrpc/connect/protocol-connect";

/**
 * The @connectrpc/connect release this transport was last proven against (test/server/in-process-transport.test.ts
 * runs the same cases through it and through createRouterTransport). It uses that release's
 * protocol internals, so package.json pins the exact version, and the test fails, saying why, when
 * the installed one differs: an upgrade must run the conformance cases and move this along, or
 * return to createRouterTransport.
 */
export const connectVersionProven = "2.2.0";

/** Where the router transport says its requests go; interceptors see it as `req.url`. */
const baseUrl = "https://in-memory";

export interface InProcessTransportOptions {
  /** Core's side: the interceptors every call goes through (outermost first). */
  router?: Pick<ConnectRouterOptions, "interceptors">;
  /** The caller's side: interceptors that run before core's (e.g. to add headers). */
  transport?: { interceptors?: Interceptor[] };
}

type UnaryFn = (req: UnaryRequest) => Promise<UnaryResponse>;

/**
 * An AbortSignal made on first use; `end` aborts it if anyone has it. With the caller's signal
 * (the client went away), it is aborted when that one is, so the handler stops its work.
 */
class LazySignal {
  private controller: AbortController | undefined;
  private ended = false;
  private reason: unknown;
  private unlink: () => void = () => {};
  constructor(caller?: AbortSignal) {
    if (!caller) return;
    const follow = () => this.end(caller.reason);
    if (caller.aborted) {
      follow();
      return;
    }
    caller.addEventListener("abort", follow, { once: true });
    this.unlink = () => caller.removeEventListener("abort", follow);
  }
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.ended) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }
  end(reason?: unknown): void {
    this.unlink();
    if (this.ended) return;
    this.ended = true;
    this.reason = reason;
    this.controller?.abort(reason);
  }
}

/** The implementations `routes` registers, by request path, without building protocol handlers. */
function collectSpecs(routes: (router: ConnectRouter) => void): Map<string, MethodImplSpec> {
  const specs = new Map<string, MethodImplSpec>();
  const add = (spec: MethodImplSpec) => specs.set(`/${spec.method.parent.typeName}/${spec.method.name}`, spec);
  const router: ConnectRouter = {
    handlers: [],
    service(service, implementation) {
      for (const spec of Object.values(createServiceImplSpec(service, implementation).methods)) add(spec);
      return router;
    },
    rpc(method, impl) {
      add(createMethodImplSpec(method, impl));
      return router;
    },
  };
  routes(router);
  return specs;
}

function applyInterceptors(next: UnaryFn, interceptors: readonly Interceptor[]): UnaryFn {
  for (let i = interceptors.length - 1; i >= 0; i--) next = interceptors[i](next as never) as unknown as UnaryFn;
  return next;
}

/** The error as a Connect client reads it from the handler's JSON error response. */
function overTheWire(thrown: unknown, responseHeader: Headers, responseTrailer: Headers): ConnectError {
  const error = thrown instanceof ConnectError ? thrown : new ConnectError("internal error", Code.Internal, undefined, undefined, thrown);
  responseHeader.set(headerContentType, contentTypeUnaryJson);
  if (!error.isWireError) mergeNonProtocolHeaders(responseHeader, error.metadata);
  const body = errorToJsonBytes(error, undefined);
  const header = trailerMux(responseHeader, responseTrailer);
  header.set(headerUnaryContentLength, body.byteLength.toString(10));
  const validated = validateResponse("unary", true, codeToHttpStatus(error.code), header);
  const [h, t] = trailerDemux(header);
  return errorFromJsonBytes(body, appendHeaders(h, t), validated.unaryError ?? new ConnectError("internal error", Code.Internal));
}

/** Core's side of one call: what the router's Connect handler does, minus the encoding. */
async function serve(serverInterceptors: Interceptor[], spec: MethodImplSpec & { kind: "unary" }, req: UnaryRequest, caller?: AbortSignal): Promise<UnaryResponse> {
  const method = spec.method;
  const lazy = new LazySignal(caller);
  const responseHeader = new Headers({ [headerContentType]: contentTypeUnaryProto });
  const responseTrailer = new Headers();
  const values = createContextValues();
  const requestHeaders = new Headers(req.header);
  const common = { service: method.parent, method, requestMethod: "POST", protocolName: "connect", url: req.url };
  const implementation: UnaryFn = async (sreq) => {
    const context: HandlerContext = {
      ...common,
      timeoutMs: () => undefined,
      responseHeader,
      responseTrailer,
      service: sreq.service,
      requestHeader: sreq.header,
      get signal() {
        return sreq.signal;
      },
      values: sreq.contextValues,
    };
    const message = create(method.output, await spec.impl(sreq.message, context));
    return { stream: false, service: method.parent, method, header: responseHeader, trailer: responseTrailer, message };
  };
  const serverReq: UnaryRequest = {
    stream: false,
    ...common,
    header: requestHeaders,
    contextValues: values,
    message: clone(method.input, req.message),
    get signal() {
      return lazy.signal;
    },
  };
  let res: UnaryResponse;
  try {
    res = await applyInterceptors(implementation, serverInterceptors)(serverReq);
  } catch (error) {
    lazy.end(error);
    throw overTheWire(error, responseHeader, responseTrailer);
  } finally {
    lazy.end();
  }
  // What the handler leaves in the response's header and trailer is what the caller reads.
  const [header, trailer] = trailerDemux(trailerMux(copyInto(res.header, responseHeader), copyInto(res.trailer, responseTrailer)));
  return { stream: false, service: method.parent, method, header, trailer, message: clone(method.output as DescMessage, res.message) };
}

/**
 * A Transport to the services `routes` registers, with `options.router.interceptors` around
 * every call (core's) and `options.transport.interceptors` on the caller's side.
 */
export function createInProcessTransport(routes: (router: ConnectRouter) => void, options: InProcessTransportOptions = {}): Transport {
  const serverInterceptors = options.router?.interceptors ?? [];
  const clientInterceptors = options.transport?.interceptors ?? [];
  const specs = collectSpecs(routes);
  let routerTransport: Transport | undefined;
  const viaRouter = () => (routerTransport ??= createRouterTransport(routes, options));

  async function unary<I extends DescMessage, O extends DescMessage>(
    method: DescMethodUnary<I, O>,
    signal: AbortSignal | undefined,
    timeoutMs: number | undefined,
    header: ConstructorParameters<typeof Headers>[0],
    input: unknown,
    contextValues?: ContextValues,
  ): Promise<UnaryResponse<I, O>> {
    if (timeoutMs !== undefined && timeoutMs > 0) {
      return viaRouter().unary(method, signal, timeoutMs, header, input as never, contextValues);
    }
    const lazy = new LazySignal(signal);
    const req: UnaryRequest = {
      stream: false,
      service: method.parent,
      method,
      requestMethod: "POST",
      url: createMethodUrl(baseUrl, method),
      header: requestHeader("unary", true, undefined, header, true),
      contextValues: contextValues ?? createContextValues(),
      message: create(method.input, input as never),
      get signal() {
        return lazy.signal;
      },
    };
    const send: UnaryFn = async (sent) => {
      const spec = specs.get(`/${method.parent.typeName}/${method.name}`);
      if (!spec || spec.kind !== "unary") {
        throw new ConnectError(`RouterHttpClient: no handler registered for /${method.parent.typeName}/${method.name}`, Code.Unimplemented);
      }
      return serve(serverInterceptors, spec, sent, signal);
    };
    try {
      const call = applyInterceptors(send, clientInterceptors)(req);
      const res = signal ? await untilAborted(call, signal) : await call;
      lazy.end();
      return res as unknown as UnaryResponse<I, O>;
    } catch (error) {
      const e = ConnectError.from(error);
      lazy.end(e);
      throw e;
    }
  }

  const stream: Transport["stream"] = (method, signal, timeoutMs, header, input, contextValues) => {
    if (timeoutMs !== undefined && timeoutMs > 0) return viaRouter().stream(method, signal, timeoutMs, header, input, contextValues);
    return runStreamingCall({
      interceptors: clientInterceptors,
      signal,
      req: {
        stream: true,
        service: method.parent,
        method,
        requestMethod: "POST",
        url: createMethodUrl(baseUrl, method),
        header: requestHeader(method.methodKind, true, undefined, header, true),
        contextValues: contextValues ?? createContextValues(),
        message: input,
      },
      next: async (req) => {
        const spec = specs.get(`/${method.parent.typeName}/${method.name}`);
        if (!spec || spec.kind === "unary") {
          throw new ConnectError(`RouterHttpClient: no handler registered for /${method.parent.typeName}/${method.name}`, Code.Unimplemented);
        }
        return serveStream(serverInterceptors, spec, req as StreamRequest) as Promise<never>;
      },
    }) as never;
  };

  return { unary, stream };
}

/** `from`'s fields into `to` (an interceptor may answer with Headers of its own). */
function copyInto(from: Headers, to: Headers): Headers {
  if (from === to) return to;
  for (const key of [...to.keys()]) to.delete(key);
  from.forEach((value, key) => to.set(key, value));
  return to;
}
