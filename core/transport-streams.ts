/**
 * The in-process transport's streaming calls (core/transport.ts): core's side of a stream, its
 * request messages as the handler reads them, and the wait that a caller's abort cuts short.
 */
import { Code, ConnectError, createHandlerContext, type Interceptor, type MethodImplSpec, type StreamRequest, type StreamResponse } from "@connectrpc/connect";
import { transformInvokeImplementation } from "@connectrpc/connect/protocol";
import { contentTypeStreamProto, endStreamFromJson, endStreamToJson, headerContentType } from "@connectrpc/connect/protocol-connect";

/**
 * Core's side of one streaming call, as Connect's stream handler runs it: its context, core's
 * interceptors around the implementation, the response begun with the first message (or the end),
 * an error ended with as the end of stream carries it (trailers and headers as its metadata), the
 * trailers given once the stream is done; the handler's signal aborted when the call ends.
 */
export async function serveStream(serverInterceptors: Interceptor[], spec: MethodImplSpec, req: StreamRequest): Promise<StreamResponse> {
  const method = spec.method;
  const context = createHandlerContext({
    ...spec,
    service: method.parent,
    requestMethod: "POST",
    protocolName: "connect",
    requestSignal: req.signal,
    requestHeader: req.header,
    url: req.url,
    responseHeader: { [headerContentType]: contentTypeStreamProto },
  });
  const output = transformInvokeImplementation(spec, context, serverInterceptors)(failingOnAbort(req.message, req.signal))[Symbol.asyncIterator]();
  // A caller that goes away ends the handler's generator where it waits (its `finally` runs), as
  // Connect's handler does when the response cannot be written.
  req.signal.addEventListener("abort", () => void output.return?.(undefined).catch(() => {}), { once: true });
  const trailer = new Headers();
  const ended = (error: unknown): ConnectError => {
    context.abort(error);
    const reason = error instanceof ConnectError ? error : new ConnectError("internal error", Code.Internal, undefined, undefined, error);
    const end = endStreamFromJson(JSON.stringify(endStreamToJson(context.responseTrailer, reason, undefined)));
    context.responseHeader.forEach((value, key) => end.error!.metadata.append(key, value));
    return end.error!;
  };
  let first: IteratorResult<unknown>;
  try {
    first = await untilAborted(output.next(), req.signal);
  } catch (error) {
    first = { done: true, value: ended(error) };
  }
  const header = new Headers(context.responseHeader);
  async function* messages(): AsyncGenerator<unknown> {
    let next = first;
    try {
      for (;;) {
        if (next.value instanceof ConnectError) throw next.value;
        if (next.done) break;
        yield next.value;
        try {
          next = await untilAborted(output.next(), req.signal);
        } catch (error) {
          next = { done: true, value: ended(error) };
        }
      }
      context.responseTrailer.forEach((value, key) => trailer.set(key, value));
    } finally {
      // The caller stopped reading early, or the stream is done: the handler's work ends with it.
      if (!next.done) await output.return?.(undefined);
      context.abort();
    }
  }
  return { stream: true, service: method.parent, method, header, trailer, message: messages(), contextValues: req.contextValues } as unknown as StreamResponse;
}

/**
 * A call's request messages as its handler reads them: once the call is aborted (the caller went
 * away), reading fails with the reason instead of ending. Connect ends the caller's request
 * iterable when the call aborts, and over HTTP the cut body is an error, never the end: an upload
 * cut short must not look whole to the handler that would then keep it.
 */
function failingOnAbort<T>(messages: AsyncIterable<T>, signal: AbortSignal): AsyncIterable<T> {
  const aborted = () => ConnectError.from(signal.reason, Code.Canceled);
  return {
    [Symbol.asyncIterator]() {
      const it = messages[Symbol.asyncIterator]();
      return {
        async next() {
          if (signal.aborted) throw aborted();
          const result = await untilAborted(it.next(), signal);
          if (result.done && signal.aborted) throw aborted();
          return result;
        },
        return: async (value?: unknown) => (await it.return?.(value)) ?? { done: true, value: undefined },
      };
    },
  };
}

/**
 * The call's answer, or `canceled` as soon as the caller's signal aborts (as Connect's transports
 * do); the handler, whose signal follows the caller's, finishes on its own.
 */
export function untilAborted<T>(call: Promise<T>, signal: AbortSignal): Promise<T> {
  const canceled = () => new ConnectError("the operation was aborted", Code.Canceled, undefined, undefined, signal.reason);
  if (signal.aborted) {
    call.catch(() => {});
    return Promise.reject(canceled());
  }
  return new Promise<T>((resolve, reject) => {
    const abort = () => {
      call.catch(() => {});
      reject(canceled());
    };
    signal.addEventListener("abort", abort, { once: true });
    call.then(resolve, reject).finally(() => signal.removeEventListener("abort", abort));
  });
}
