import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestDatabase, type TestDatabase } from "../support/database.ts";
import { runCli, startServe, type ServeProcess } from "../support/process.ts";

/** A span as OTLP/HTTP JSON carries it, with its attributes flattened. */
interface ExportedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  /** 2: error. */
  status?: { code?: number; message?: string };
  service: unknown;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
}

/** A collector's OTLP/HTTP traces endpoint that keeps what it receives. */
async function startCollector(): Promise<{ url: string; spans: ExportedSpan[]; requests: number; close(): Promise<void> }> {
  const collector = { url: "", spans: [] as ExportedSpan[], requests: 0, close: async () => {} };
  const server: Server = createServer(async (req, res) => {
    let body = "";
    for await (const chunk of req) body += chunk;
    collector.requests++;
    assert.equal(req.url, "/v1/traces");
    assert.equal(req.headers["content-type"], "application/json");
    for (const resourceSpans of JSON.parse(body).resourceSpans ?? []) {
      const service = attributesOf(resourceSpans.resource?.attributes)["service.name"];
      for (const scope of resourceSpans.scopeSpans ?? []) {
        for (const span of scope.spans ?? []) {
          collector.spans.push({ ...span, parentSpanId: span.parentSpanId ?? "", attributes: attributesOf(span.attributes), service });
        }
      }
    }
    res.writeHead(200, { "content-type": "application/json" }).end("{}");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  collector.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  collector.close = () => new Promise((resolve) => server.close(() => resolve()));
  return collector;
}

function attributesOf(list: Array<{ key: string; value: OtlpValue }> = []): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const { key, value } of list) out[key] = value.stringValue ?? (value.intValue === undefined ? value.boolValue : Number(value.intValue));
  return out;
}

/** The request log line with this request id. */
function requestLine(output: string, requestId: string): Record<string, unknown> {
  const line = output
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l))
    .find((l) => l.msg === "request" && l.requestId === requestId);
  assert.ok(line, `no request line for ${requestId}`);
  return line;
}

/**
 * Tracing with the real process and the real OTLP exporter: `outpost serve` sends its spans to a
 * collector run by the test, one trace per request from the edge through core to the database,
 * continuing a caller's traceparent; without an endpoint it sends nothing and logs no trace ids.
 */
describe("tracing (OpenTelemetry over OTLP/HTTP)", function () {
  this.timeout(120_000);
  let dataDir: string;
  let database: TestDatabase | undefined;
  let env: Record<string, string | undefined>;
  let collector: Awaited<ReturnType<typeof startCollector>>;
  let key: string;
  let userId: string;

  before(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "outpost-tracing-"));
    if (process.env.DATABASE_URL) database = await createTestDatabase();
    env = { DATA_DIR: dataDir, DATABASE_URL: database?.url ?? "", OTEL_EXPORTER_OTLP_ENDPOINT: "", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "" };
    collector = await startCollector();
    const user = await runCli(["user", "create", "--email", "tracer@example.com", "--password", "a long password"], env);
    assert.equal(user.code, 0, user.stderr);
    userId = /\(([0-9a-f-]{36})\)/.exec(user.stdout)![1];
    const created = await runCli(["api-key", "create", "--email", "tracer@example.com", "--name", "tracing"], env);
    assert.equal(created.code, 0, created.stderr);
    key = created.stdout.trim().split("\n").pop()!;
  });

  after(async () => {
    await collector?.close();
    await database?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const list = (serve: ServeProcess, headers: Record<string, string>) =>
    fetch(`http://127.0.0.1:${serve.port}/api/http/organizations/listOrganizations`, { headers: { "x-api-key": key, ...headers } });

  describe("with OTEL_EXPORTER_OTLP_ENDPOINT", () => {
    const parentTraceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const parentSpanId = "00f067aa0ba902b7";
    let output: string;

    before(async () => {
      const serve = await startServe({ ...env, OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_SERVICE_NAME: "outpost-test" });
      try {
        const plain = await list(serve, { "x-request-id": "trace-test-plain" });
        assert.equal(plain.status, 200, await plain.text());
        const continued = await list(serve, { "x-request-id": "trace-test-parent", traceparent: `00-${parentTraceId}-${parentSpanId}-01` });
        assert.equal(continued.status, 200, await continued.text());
        const refused = await fetch(`http://127.0.0.1:${serve.port}/api/http/organizations/listOrganizations`, {
          headers: { "x-api-key": `${key.slice(0, -4)}0000`, "x-request-id": "trace-test-refused" },
        });
        assert.equal(refused.status, 401);
      } finally {
        // The shutdown sends the spans still waiting in the batch.
        assert.equal(await serve.stop(), 0);
        output = serve.output();
      }
    });

    it("sends one trace per request: the edge's span, core's call under it, the statements under that", () => {
      const edge = collector.spans.find((s) => s.attributes["outpost.request_id"] === "trace-test-plain");
      assert.ok(edge, `no span with the request id among ${collector.spans.map((s) => s.name).join(", ")}`);
      assert.equal(edge.service, "outpost-test");
      assert.equal(edge.name, "GET /api/http/organizations/listOrganizations");
      assert.equal(edge.kind, 2, "a server span");
      assert.equal(edge.parentSpanId, "", "a trace of its own");
      assert.equal(edge.attributes["http.route"], "/api/http/organizations/listOrganizations");
      assert.equal(edge.attributes["http.request.method"], "GET");
      assert.equal(edge.attributes["http.response.status_code"], 200);

      const trace = collector.spans.filter((s) => s.traceId === edge.traceId);
      const core = trace.find((s) => s.parentSpanId === edge.spanId);
      assert.ok(core, "core's call is a child of the edge's span");
      assert.equal(core.name, "outpost.organizations.v1.OrganizationsService/ListOrganizations");
      assert.equal(core.attributes["rpc.service"], "outpost.organizations.v1.OrganizationsService");
      assert.equal(core.attributes["rpc.method"], "ListOrganizations");
      assert.equal(core.attributes["rpc.system"], "connect_rpc");

      // The credential's lookup statement serves several calls, so the call shows its wait for it.
      const lookup = trace.find((s) => s.name === "credential lookup");
      assert.ok(lookup, `no credential lookup among ${trace.map((s) => s.name).join(", ")}`);
      assert.equal(lookup.parentSpanId, core.spanId, "the lookup is under core's call");
      const statements = trace.filter((s) => s.attributes["db.system"] === "postgresql");
      assert.ok(statements.length >= 1, "the organizations' query");
      for (const statement of statements) {
        assert.equal(statement.parentSpanId, core.spanId, `${statement.name} is under core's call`);
        assert.equal(statement.kind, 3, "a client span");
        // Placeholders, never the values: the caller's id is a parameter of the query.
        const text = String(statement.attributes["db.statement"]);
        assert.ok(!text.includes(userId), `no values in "${text}"`);
      }
      assert.ok(statements.some((s) => /\?|\$1/.test(String(s.attributes["db.statement"]))));
    });

    it("puts the trace and span ids on the request's log line", () => {
      const edge = collector.spans.find((s) => s.attributes["outpost.request_id"] === "trace-test-plain")!;
      const line = requestLine(output, "trace-test-plain");
      assert.equal(line.trace_id, edge.traceId);
      assert.equal(line.span_id, edge.spanId);
    });

    it("continues the trace of an incoming W3C traceparent", () => {
      const edge = collector.spans.find((s) => s.attributes["outpost.request_id"] === "trace-test-parent");
      assert.ok(edge);
      assert.equal(edge.traceId, parentTraceId);
      assert.equal(edge.parentSpanId, parentSpanId);
      assert.ok(
        collector.spans.some((s) => s.traceId === parentTraceId && s.parentSpanId === edge.spanId),
        "core's call joins it too",
      );
      assert.equal(requestLine(output, "trace-test-parent").trace_id, parentTraceId);
    });

    it("marks a failed call's span with the Connect code it failed with; a 4xx is no server error", () => {
      const edge = collector.spans.find((s) => s.attributes["outpost.request_id"] === "trace-test-refused");
      assert.ok(edge);
      assert.equal(edge.attributes["http.response.status_code"], 401);
      assert.notEqual(edge.status?.code, 2);
      const core = collector.spans.find((s) => s.parentSpanId === edge.spanId);
      assert.ok(core);
      assert.equal(core.attributes["rpc.connect_rpc.error_code"], "unauthenticated");
      assert.deepEqual(core.status, { code: 2, message: "unauthenticated" });
    });

    it("starts no trace for work outside a request (start-up, the periodic sweeps and key checks)", () => {
      // Start-up's own statements (migrations, the signing-key check) ran under no request.
      const roots = collector.spans.filter((s) => s.parentSpanId === "");
      assert.ok(
        roots.every((s) => s.kind === 2),
        roots.map((s) => s.name).join(", "),
      );
    });
  });

  describe("without an endpoint", () => {
    it("exports nothing and logs no trace ids", async () => {
      const before = collector.requests;
      const serve = await startServe({ ...env, OTEL_SERVICE_NAME: "outpost-test" });
      let output: string;
      try {
        const res = await list(serve, { "x-request-id": "trace-test-off" });
        assert.equal(res.status, 200);
      } finally {
        assert.equal(await serve.stop(), 0);
        output = serve.output();
      }
      const line = requestLine(output, "trace-test-off");
      assert.equal(line.trace_id, undefined);
      assert.equal(line.span_id, undefined);
      assert.ok(!output.includes("tracing to an OTLP collector"));
      assert.equal(collector.requests, before);
    });
  });
});
