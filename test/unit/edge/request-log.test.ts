/**
 * The request log line (edge/request-log.ts): one structured line per response once it is over,
 * with the request's id, the path and never the query string, a route label of a fixed set, the
 * status and whether the client left first. Koa's context is stood in for by the few fields the
 * middleware reads; test/server/shutdown.test.ts reads the same lines off a real process.
 */
import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import type { Context, Next } from "koa";
import { pino } from "pino";
import { requestLog, routeLabel, type RequestFacts } from "../../../edge/request-log.ts";

/** A logger whose records the test reads back, as the JSON objects pino writes. */
function recordingLogger() {
  const records: Array<Record<string, unknown>> = [];
  const logger = pino({ level: "info" }, { write: (line: string) => void records.push(JSON.parse(line)) });
  return { logger, records };
}

interface FakeRequest {
  method?: string;
  url?: string;
  headers?: Record<string, string>;
  /** Koa's _matchedRoute, as @koa/router leaves it. */
  matchedRoute?: string;
}

/** The part of a Koa context the middleware reads, and a response that ends when the test says. */
function fakeContext({ method = "GET", url = "/healthz", headers = {}, matchedRoute }: FakeRequest = {}) {
  const res = Object.assign(new EventEmitter(), {
    statusCode: 200,
    writableFinished: false,
    headers: {} as Record<string, string>,
    setHeader(name: string, value: string) {
      this.headers[name.toLowerCase()] = value;
    },
  });
  const ctx = {
    method,
    url,
    path: url.split("?")[0],
    req: { headers },
    res,
    state: {} as Context["state"],
    get: (name: string) => headers[name.toLowerCase()] ?? "",
    get status() {
      return res.statusCode;
    },
    _matchedRoute: matchedRoute,
  };
  /** The response ends: sent whole, or cut off by the client leaving. */
  const close = (status: number, finished = true) => {
    res.statusCode = status;
    res.writableFinished = finished;
    res.emit("close");
  };
  return { ctx: ctx as unknown as Context, res, close };
}

const nothing: Next = async () => {};

/** The fields of a record that the middleware shapes (pino's own pid, hostname and time left out). */
const shaped = (record: Record<string, unknown>) => {
  const { pid: _pid, hostname: _hostname, time: _time, ...fields } = record;
  return fields;
};

describe("unit: the request log line", () => {
  it("is written once the response is over: level, id, method, path without its query, route, status and time", async () => {
    const { logger, records } = recordingLogger();
    const { ctx, close } = fakeContext({ method: "POST", url: "/sign-in?token=ops_secret", headers: { "x-request-id": "req-12345678" } });
    await requestLog(logger)(ctx, nothing);
    assert.equal(records.length, 0, "nothing before the response is over");
    close(303);
    assert.equal(records.length, 1);
    const { ms, ...line } = shaped(records[0]);
    assert.deepEqual(line, { level: 30, msg: "request", requestId: "req-12345678", method: "POST", path: "/sign-in", route: "other", status: 303 });
    assert.ok(Number.isInteger(ms) && (ms as number) >= 0, `ms: ${ms}`);
    assert.doesNotMatch(JSON.stringify(records[0]), /ops_secret|token=/, "the query string never reaches the log");
  });

  it("marks a response the client left before it ended as aborted", async () => {
    const { logger, records } = recordingLogger();
    const { ctx, close } = fakeContext();
    await requestLog(logger)(ctx, nothing);
    close(200, false);
    assert.equal(records[0].aborted, true);
  });

  it("keeps and echoes a sane request id, and gives the request's own lines the same id", async () => {
    const { logger, records } = recordingLogger();
    const { ctx, res, close } = fakeContext({ headers: { "x-request-id": "trace.abc-123_XYZ" } });
    await requestLog(logger)(ctx, async () => ctx.state.log.warn({ reason: "test" }, "inside the request"));
    close(200);
    assert.equal(res.headers["x-request-id"], "trace.abc-123_XYZ");
    assert.equal(ctx.state.requestId, "trace.abc-123_XYZ");
    assert.deepEqual(
      records.map((r) => [r.msg, r.requestId]),
      [
        ["inside the request", "trace.abc-123_XYZ"],
        ["request", "trace.abc-123_XYZ"],
      ],
    );
  });

  it("replaces an id that is too short, too long or holds other characters with a new one", async () => {
    for (const odd of ["", "short", "x".repeat(65), "<script>alert(1)</script>", "has space 12345", "line\nbreak-12345"]) {
      const { logger, records } = recordingLogger();
      const { ctx, res, close } = fakeContext({ headers: { "x-request-id": odd } });
      await requestLog(logger)(ctx, nothing);
      close(200);
      assert.match(res.headers["x-request-id"], /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, JSON.stringify(odd));
      assert.equal(records[0].requestId, res.headers["x-request-id"]);
    }
    const kept = fakeContext({ headers: { "x-request-id": "x".repeat(64) } });
    await requestLog(recordingLogger().logger)(kept.ctx, nothing);
    assert.equal(kept.res.headers["x-request-id"], "x".repeat(64), "64 characters is still sane");
  });

  it("labels the route from a fixed set: what the answering piece set, the router's template, else unmatched for a 404 and other", () => {
    const label = (request: FakeRequest, status: number, route?: string) => {
      const { ctx, res } = fakeContext(request);
      res.statusCode = status;
      if (route) ctx.state.route = route;
      return routeLabel(ctx);
    };
    assert.equal(label({ matchedRoute: "/dashboard/:slug" }, 200, "/api/http/servers/listServers"), "/api/http/servers/listServers");
    assert.equal(label({ url: "/dashboard/acme", matchedRoute: "/dashboard/:slug" }, 200), "/dashboard/:slug");
    assert.equal(label({ url: "/nowhere/7f1c" }, 404), "unmatched");
    assert.equal(label({ url: "/assets/app.js" }, 200), "other");
  });

  it("counts each response for the metrics, a method outside the usual ones as other while the line keeps it", async () => {
    const { logger, records } = recordingLogger();
    const facts: RequestFacts[] = [];
    const { ctx, close } = fakeContext({ method: "PROPFIND", url: "/x" });
    await requestLog(logger, { server: "game", metrics: { request: (f) => facts.push(f) } })(ctx, nothing);
    close(405);
    assert.equal(facts.length, 1);
    const { seconds, ...counted } = facts[0];
    assert.deepEqual(counted, { server: "game", method: "other", route: "other", status: 405 });
    assert.ok(seconds >= 0);
    assert.equal(records[0].method, "PROPFIND");
  });
});
