/**
 * OpenTelemetry tracing for `outpost serve`, off unless an OTLP endpoint is configured
 * (docs/operations.md, Tracing). edge/ and core/ only call the OpenTelemetry API, which is a no-op
 * until an SDK is registered; this registers one: spans batched to the collector over OTLP/HTTP
 * (JSON), the active span carried by AsyncLocalStorage from the edge's request through the
 * in-process transport into core and its statements, and W3C trace context read from requests.
 */
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { context, diag, DiagLogLevel, propagation, trace, SpanKind, SpanStatusCode, type Attributes, type Context, type Link } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, ParentBasedSampler, SamplingDecision, TracerProvider, type Sampler, type SamplingResult } from "@opentelemetry/sdk-trace";
import { DefaultLogger, type LogContext, type Logger as OrmLogger, type LoggerOptions } from "@mikro-orm/core";
import type { Logger } from "pino";
import { querySpan } from "../core/db/query-spans.ts";
import type { TracingConfig } from "./config.ts";

/** How long one export may take; a shutdown waits at most about this for the last spans. */
const exportTimeoutMs = 2_000;

/**
 * Traces start only at a request (a server span). Work outside one, such as the sweeps and the
 * signing-key refresh every two seconds, would otherwise send a one-statement trace each time.
 * Under a parent, the parent decides (a proxy's traceparent that says "not sampled" is obeyed).
 */
const requestsOnly: Sampler = {
  shouldSample(_context: Context, _traceId: string, _name: string, kind: SpanKind, _attributes: Attributes, _links: Link[]): SamplingResult {
    return { decision: kind === SpanKind.SERVER ? SamplingDecision.RECORD_AND_SAMPLED : SamplingDecision.NOT_RECORD };
  },
  toString: () => "RequestsOnly",
};

export interface Tracing {
  /** Sends the spans still waiting and unregisters the SDK. */
  shutdown(): Promise<void>;
}

/** Registers the SDK globally (the API has one slot per process); `shutdown` gives the slot back. */
export function startTracing(config: TracingConfig, logger: Logger): Tracing {
  const exporter = new OTLPTraceExporter({ url: config.url, timeoutMillis: exportTimeoutMs });
  const provider = new TracerProvider({
    // Instances share the service's name; the host and a per-process id tell them apart.
    resource: resourceFromAttributes({ "service.name": config.serviceName, "host.name": hostname(), "service.instance.id": randomUUID() }),
    sampler: new ParentBasedSampler({ root: requestsOnly }),
    spanProcessors: [new BatchSpanProcessor({ exporter, exportTimeoutMillis: exportTimeoutMs })],
  });
  // The SDK reports a collector it cannot reach through diag; say so in the log, not on stderr.
  const warn = (message: string) => logger.warn({ component: "opentelemetry" }, message);
  diag.setLogger({ error: warn, warn, info: () => {}, debug: () => {}, verbose: () => {} }, DiagLogLevel.WARN);
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  logger.info({ url: config.url, serviceName: config.serviceName }, "tracing to an OTLP collector");
  return {
    async shutdown() {
      try {
        await provider.shutdown();
      } finally {
        trace.disable();
        propagation.disable();
        context.disable();
        diag.disable();
      }
    },
  };
}

/**
 * The ORM's logger with a span for each query it ran (under the active span, so under the core
 * call that ran it). MikroORM reports a query once it is over, with how long it took, so the span
 * is made afterwards with that start. Its text is the query as the ORM built it, with `?` for the
 * values (query-params logging stays off, so the values are never in it).
 */
export function tracedQueryLogger(options: LoggerOptions): OrmLogger {
  const tracer = trace.getTracer("outpost.db");
  return new (class extends DefaultLogger {
    override logQuery(query: { query: string } & LogContext): void {
      super.logQuery(query);
      // Transaction control (begin, commit) is reported without a duration: no span for it.
      if (query.took === undefined || !query.query) return;
      const end = Date.now();
      const span = querySpan(query.query, end - query.took);
      const active = tracer.startSpan(span.name, span.options);
      if (query.level === "error") active.setStatus({ code: SpanStatusCode.ERROR });
      active.end(end);
    }
  })(options);
}
