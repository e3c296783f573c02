import { ConnectError, type Interceptor } from "@connectrpc/connect";
import { codeToString } from "@connectrpc/connect/protocol-connect";
import { SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";

/**
 * A span per unary procedure call, a child of whatever span is active (the edge's request, or the
 * caller's own trace on /api/rpc), so the database statements it runs hang under it. Core only
 * speaks the OpenTelemetry API: with no SDK registered (tracing not configured) every span is a
 * no-op. Streams get none: an agent's stream lives for hours, and its span would say nothing about
 * the messages in it. Outermost, so a failure is recorded with the Connect code callers see.
 */
export function createTracingInterceptor(): Interceptor {
  const tracer = trace.getTracer("outpost.core");
  return (next) => (req) => {
    if (req.stream) return next(req);
    const attributes = { "rpc.system": "connect_rpc", "rpc.service": req.service.typeName, "rpc.method": req.method.name };
    return tracer.startActiveSpan(`${req.service.typeName}/${req.method.name}`, { kind: SpanKind.INTERNAL, attributes }, async (span) => {
      try {
        return await next(req);
      } catch (error) {
        const code = codeToString(ConnectError.from(error).code);
        span.setAttribute("rpc.connect_rpc.error_code", code);
        span.setStatus({ code: SpanStatusCode.ERROR, message: code });
        throw error;
      } finally {
        span.end();
      }
    });
  };
}
