/**
 * The one way the edge calls core for the request it is serving. Every call carries the same
 * facts, put where core's interceptors read them: the caller's credential (the session cookie as
 * the session header, an X-API-Key as itself; both present is core's ambiguous_credential), the
 * client's address (always the edge's own view of it, so a caller cannot choose its rate-limit
 * key) and the request id (so core's log names the request a person quotes). The dashboard, both
 * issuers, the account pages and /api/http build their clients here, and no message body carries
 * a credential: core reads it from the header, for edge-only services too.
 */
import type { DescService } from "@bufbuild/protobuf";
import { createClient, type Client, type Transport } from "@connectrpc/connect";
import type { Context } from "koa";
import { apiKeyHeader, clientIpHeader, requestIdHeader, sessionHeader } from "../contract/credentials.ts";
import { readSessionCookie } from "./cookies.ts";

export interface CoreCallsOptions {
  /** The in-process transport to every core service. */
  transport: Transport;
  /** The session cookie has the `__Host-` prefix (the site is served over https). */
  secureCookies: boolean;
  /**
   * Whether the caller's credential travels (default true). The Game OAuth issuer says false: it
   * has no dashboard sessions or API keys, and on localhost a dashboard cookie of the same name
   * (cookies ignore ports) must not reach core from there.
   */
  credentials?: boolean;
}

export interface CoreCalls {
  /** A client of `service` that calls core as this request's caller. */
  client<S extends DescService>(ctx: Context, service: S): Client<S>;
  /** The same as a transport, for calls whose method is chosen at run time (the HTTP API). */
  transport(ctx: Context): Transport;
}

/** `transport` with `headers` set on every call (they win over a call's own of the same name). */
function withHeaders(transport: Transport, headers: Headers): Transport {
  const merged = (own: ConstructorParameters<typeof Headers>[0]) => {
    const result = new Headers(own);
    headers.forEach((value, name) => result.set(name, value));
    return result;
  };
  return {
    unary: (method, signal, timeoutMs, header, input, contextValues) => transport.unary(method, signal, timeoutMs, merged(header), input, contextValues),
    stream: (method, signal, timeoutMs, header, input, contextValues) => transport.stream(method, signal, timeoutMs, merged(header), input, contextValues),
  };
}

export function createCoreCalls({ transport, secureCookies, credentials = true }: CoreCallsOptions): CoreCalls {
  // One bound transport per request, however many clients its handler makes.
  const bound = new WeakMap<Context, Transport>();

  function headersOf(ctx: Context): Headers {
    const headers = new Headers({ [clientIpHeader]: ctx.ip });
    if (ctx.state.requestId) headers.set(requestIdHeader, ctx.state.requestId);
    if (!credentials) return headers;
    const session = readSessionCookie(ctx.req.headers, secureCookies);
    if (session) headers.set(sessionHeader, session);
    const apiKey = ctx.get(apiKeyHeader);
    if (apiKey) headers.set(apiKeyHeader, apiKey);
    return headers;
  }

  function transportFor(ctx: Context): Transport {
    let found = bound.get(ctx);
    if (!found) bound.set(ctx, (found = withHeaders(transport, headersOf(ctx))));
    return found;
  }

  return {
    client: (ctx, service) => createClient(service, transportFor(ctx)),
    transport: transportFor,
  };
}

/**
 * A signal aborted when the client goes away before it is answered: passed to a call that may wait
 * on something slow (the assistant's model), it ends that work with the request.
 */
export function untilClientGone(ctx: Context): AbortSignal {
  const abort = new AbortController();
  ctx.res.once("close", () => {
    if (!ctx.res.writableFinished) abort.abort();
  });
  return abort.signal;
}
