/**
 * core/transport.ts's streaming calls against Connect's createRouterTransport: a server's stream,
 * a client's, and how each ends, observed the same through both.
 */
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type ConnectRouter, type HandlerContext, type Interceptor } from "@connectrpc/connect";
import { ErrorInfoSchema } from "../../gen/outpost/errors/v1/errors_pb.js";
import { GameOAuthService, WatchAuthorizationResponseSchema } from "../../gen/outpost/gameoauth/v1/game_oauth_service_pb.js";
import { ServersService } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { describeError, headersOf, same, transports, type Build } from "./transport-conformance.ts";

describe("in-process transport: streams", () => {
  /** A server stream's handler that records what it saw and ends as `end` says. */
  function watching(log: string[], end: "ends" | "fails first" | "fails midway" | "throws anything") {
    return (router: ConnectRouter) =>
      router.service(GameOAuthService, {
        async *watchAuthorization(req, ctx: HandlerContext) {
          log.push(`handler session=${req.sessionId} x-test=${ctx.requestHeader.get("x-test")} ${ctx.requestHeader.get("content-type")} ${ctx.method.name}`);
          ctx.responseHeader.set("x-answer", "42");
          ctx.responseTrailer.set("x-trailer", "t");
          ctx.signal.addEventListener("abort", () =>
            log.push(`handler signal aborted: ${ctx.signal.reason instanceof ConnectError ? Code[ctx.signal.reason.code] : String(ctx.signal.reason)}`),
          );
          if (end === "fails first")
            throw new ConnectError("not yet", Code.FailedPrecondition, { "x-why": "because" }, [
              { desc: ErrorInfoSchema, value: create(ErrorInfoSchema, { reason: "not_yet" }) },
            ]);
          yield create(WatchAuthorizationResponseSchema, { replaced: false });
          if (end === "fails midway") throw new ConnectError("gone", Code.Unavailable);
          if (end === "throws anything") throw new Error("database on fire");
          yield create(WatchAuthorizationResponseSchema, { replaced: false });
        },
      });
  }

  it("streams a server's messages with its headers and trailers, through both sides' interceptors, and fails as over the wire", async () => {
    for (const end of ["ends", "fails first", "fails midway", "throws anything"] as const) {
      await same(async (build) => {
        const log: string[] = [];
        const named =
          (name: string): Interceptor =>
          (next) =>
          async (req) => {
            log.push(`${name} ${req.url} ${req.method.name} stream=${req.stream} headers ${JSON.stringify(headersOf(req.header))}`);
            const res = await next(req);
            log.push(`${name} got ${res.stream ? "stream" : "unary"} headers ${JSON.stringify(headersOf(res.header))}`);
            return res;
          };
        const setHeader: Interceptor = (next) => (req) => (req.header.set("x-test", "1"), next(req));
        const client = createClient(
          GameOAuthService,
          build(watching(log, end), { router: { interceptors: [named("core")] }, transport: { interceptors: [setHeader, named("client")] } }),
        );
        let header: Record<string, string> = {};
        let trailer: Record<string, string> = {};
        const received: string[] = [];
        let failed: unknown;
        try {
          for await (const m of client.watchAuthorization(
            { sessionId: "h1" },
            { onHeader: (h) => (header = headersOf(h)), onTrailer: (t) => (trailer = headersOf(t)) },
          )) {
            received.push(m.$typeName);
          }
        } catch (error) {
          failed = describeError(error);
        }
        await sleep(10);
        return { end, log, header, trailer, received, failed };
      });
    }
  });

  it("gives a client stream's handler each message, and the caller its answer or its error", async () => {
    for (const fails of [false, true]) {
      await same(async (build) => {
        const seen: string[] = [];
        const client = createClient(
          ServersService,
          build(
            (router) =>
              router.service(ServersService, {
                async uploadFile(requests) {
                  for await (const r of requests) seen.push(r.part.case === "data" ? `data ${Buffer.from(r.part.value).toString()}` : `header ${r.part.value?.path}`);
                  if (fails) throw new ConnectError("too big", Code.ResourceExhausted);
                  return { path: "a.txt", size: 6n };
                },
              }),
            {},
          ),
        );
        async function* parts() {
          yield { part: { case: "header" as const, value: { serverId: "s", path: "a.txt" } } };
          for (const piece of ["abc", "def"]) yield { part: { case: "data" as const, value: Buffer.from(piece) } };
        }
        const answer = await client.uploadFile(parts()).then(
          (res) => `${res.path} ${res.size}`,
          (error) => describeError(error),
        );
        return { seen, answer };
      });
    }
  });

  it("aborts the handler's signal when the caller aborts, and leaves it be when the caller only stops reading", async () => {
    // The one difference, by design: a caller that aborts also ends the handler's generator where
    // it waits, so its `finally` runs; the router transport leaves it suspended.
    const ended = new Map<Build, string[]>();
    const seen = await same(async (build) => {
      const log: string[] = [];
      const finished: string[] = [];
      ended.set(build, finished);
      const client = createClient(
        GameOAuthService,
        build(
          (router) =>
            router.service(GameOAuthService, {
              async *watchAuthorization(req, ctx: HandlerContext) {
                ctx.signal.addEventListener("abort", () => log.push(`${req.sessionId}: aborted, ${Code[ConnectError.from(ctx.signal.reason).code]}`));
                try {
                  for (;;) {
                    yield create(WatchAuthorizationResponseSchema, {});
                    await sleep(5);
                  }
                } finally {
                  finished.push(`${req.sessionId}: handler ended`);
                }
              },
            }),
          {},
        ),
      );
      let read = 0;
      for await (const _ of client.watchAuthorization({ sessionId: "stopped" })) if (++read === 2) break;
      const controller = new AbortController();
      const aborted = await (async () => {
        for await (const _ of client.watchAuthorization({ sessionId: "aborted" }, { signal: controller.signal })) controller.abort();
      })().then(
        () => "ended",
        (error) => Code[ConnectError.from(error).code],
      );
      const inProcess = build === transports[1][1];
      for (let i = 0; i < 50 && (!log.length || (inProcess && !finished.length)); i++) await sleep(10);
      await sleep(20);
      return { read, aborted, log };
    });
    assert.deepEqual(seen, { read: 2, aborted: "Canceled", log: ["aborted: aborted, Canceled"] });
    assert.deepEqual(ended.get(transports[1][1]), ["aborted: handler ended"]);
    assert.deepEqual(ended.get(transports[0][1]), []);
  });

  it("answers a caller that aborts while the handler is slow to yield at once, not when the handler yields", async () => {
    await same(async (build) => {
      const client = createClient(
        GameOAuthService,
        build(
          (router) =>
            router.service(GameOAuthService, {
              async *watchAuthorization() {
                await sleep(1_500);
                yield create(WatchAuthorizationResponseSchema, {});
                await sleep(1_500);
                yield create(WatchAuthorizationResponseSchema, {});
              },
            }),
          {},
        ),
      );
      const outcomes: string[] = [];
      for (const abortAfterFirst of [false, true]) {
        const controller = new AbortController();
        const started = Date.now();
        if (!abortAfterFirst) setTimeout(() => controller.abort(), 50);
        const outcome = await (async () => {
          for await (const _ of client.watchAuthorization({}, { signal: controller.signal })) {
            if (abortAfterFirst) setTimeout(() => controller.abort(), 50);
          }
        })().then(
          () => "ended",
          (error) => Code[ConnectError.from(error).code],
        );
        const waited = Date.now() - started - (abortAfterFirst ? 1_500 : 0);
        outcomes.push(`${outcome} ${waited < 1_000 ? "promptly" : `after ${waited} ms`}`);
      }
      return outcomes;
    });
  });
});
