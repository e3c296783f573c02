/**
 * core/transport.ts against Connect's createRouterTransport: the same scenario through both, and
 * what the caller, the interceptors and the handler observe must be the same.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, createContextKey, type HandlerContext, type Interceptor } from "@connectrpc/connect";
import { ErrorInfoSchema } from "../../gen/outpost/errors/v1/errors_pb.js";
import { GetJwksResponseSchema, Issuer, KeysService } from "../../gen/outpost/keys/v1/keys_service_pb.js";
import { GameOAuthService, WatchAuthorizationResponseSchema } from "../../gen/outpost/gameoauth/v1/game_oauth_service_pb.js";
import { AuthService } from "../../gen/outpost/auth/v1/auth_service_pb.js";
import { OrganizationsService } from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { sessionHeader } from "../../contract/credentials.ts";
import { connectVersionProven } from "../../core/transport.ts";
import { describeError, headersOf, same } from "./transport-conformance.ts";
import { startTestCore, type TestCore } from "../support/core.ts";

const seenKey = createContextKey<string[]>([], { description: "test: seen" });

describe("in-process transport", () => {
  it("is proven against the installed @connectrpc/connect, which package.json pins", () => {
    // The package exports no package.json: find it above the entry point that resolves.
    const entry = createRequire(import.meta.url).resolve("@connectrpc/connect");
    const installed = (JSON.parse(readFileSync(join(entry.slice(0, entry.lastIndexOf("/dist/")), "package.json"), "utf8")) as { version: string }).version;
    const pinned = (JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { dependencies: Record<string, string> }).dependencies[
      "@connectrpc/connect"
    ];
    assert.equal(pinned, connectVersionProven, "package.json pins @connectrpc/connect exactly to the release core/transport.ts was proven against");
    assert.equal(
      installed,
      connectVersionProven,
      `@connectrpc/connect ${installed} is installed, but core/transport.ts was proven against ${connectVersionProven}. Run this suite; when every case below passes, ` +
        "set connectVersionProven in core/transport.ts to the new release (and the pin in package.json); when one fails, see its message.",
    );
  });

  it("runs the caller's interceptors, then core's in order, with the same request facts", async () => {
    await same(async (build) => {
      const log: string[] = [];
      const named =
        (name: string): Interceptor =>
        (next) =>
        async (req) => {
          log.push(`${name} ${req.url} ${req.requestMethod} ${req.method.name} ${req.service.typeName} stream=${req.stream}`);
          log.push(`${name} headers ${JSON.stringify(headersOf(req.header))}`);
          log.push(`${name} seen ${JSON.stringify(req.contextValues.get(seenKey))}`);
          if (name === "client") req.contextValues.set(seenKey, ["client"]);
          const res = await next(req);
          log.push(`${name} done ${res.stream ? "stream" : res.message.$typeName}`);
          return res;
        };
      const setHeader: Interceptor = (next) => (req) => (req.header.set("x-test", "1"), next(req));
      const client = createClient(
        KeysService,
        build(
          (router) =>
            router.service(KeysService, {
              getJwks(req, ctx) {
                log.push(`handler issuer=${req.issuer} x-test=${ctx.requestHeader.get("x-test")} method=${ctx.method.name}`);
                return { keys: [{ kid: "k1", kty: "RSA", alg: "RS256", use: "sig", n: "n", e: "AQAB" }] };
              },
            }),
          { router: { interceptors: [named("error"), named("rate"), named("context")] }, transport: { interceptors: [setHeader, named("client")] } },
        ),
      );
      const res = await client.getJwks({ issuer: Issuer.GAME });
      return { log, res: res.keys.map((k) => ({ ...k })), type: res.$typeName };
    });
  });

  it("gives the caller the handler's response headers and trailers", async () => {
    await same(async (build) => {
      const client = createClient(
        KeysService,
        build(
          (router) =>
            router.service(KeysService, {
              getJwks(_req, ctx) {
                ctx.responseHeader.set("x-answer", "42");
                ctx.responseTrailer.set("x-trailer", "t");
                return {};
              },
            }),
          {},
        ),
      );
      let header: Record<string, string> = {};
      let trailer: Record<string, string> = {};
      await client.getJwks({ issuer: Issuer.GAME }, { onHeader: (h) => (header = headersOf(h)), onTrailer: (t) => (trailer = headersOf(t)) });
      return { header, trailer };
    });
  });

  it("hands each side its own copy of the messages", async () => {
    await same(async (build) => {
      const kept = create(GetJwksResponseSchema, { keys: [{ kid: "kept" }] });
      const client = createClient(
        KeysService,
        build((router) => router.service(KeysService, { getJwks: () => kept }), {}),
      );
      const res = await client.getJwks({ issuer: Issuer.GAME });
      res.keys[0].kid = "changed by the caller";
      return { handlerStill: kept.keys[0].kid, same: res === kept };
    });
  });

  it("fails as over the wire: code, message, details and metadata, from a ConnectError or anything else", async () => {
    await same(async (build) => {
      const client = createClient(
        KeysService,
        build(
          (router) =>
            router.service(KeysService, {
              getJwks() {
                throw new ConnectError("no keys", Code.FailedPrecondition, { "x-why": "because" }, [
                  { desc: ErrorInfoSchema, value: create(ErrorInfoSchema, { reason: "no_keys" }) },
                ]);
              },
              rotateKeys() {
                throw new Error("database on fire");
              },
            }),
          {},
        ),
      );
      const errors = [];
      for (const call of [() => client.getJwks({ issuer: Issuer.GAME }), () => client.rotateKeys({ issuer: Issuer.GAME })]) {
        try {
          await call();
          assert.fail("expected an error");
        } catch (error) {
          errors.push(describeError(error));
        }
      }
      return errors;
    });
  });

  it("aborts the handler's signal when the call ends, with the error when it failed", async () => {
    await same(async (build) => {
      const signals: AbortSignal[] = [];
      const client = createClient(
        KeysService,
        build(
          (router) =>
            router.service(KeysService, {
              getJwks(_req, ctx: HandlerContext) {
                signals.push(ctx.signal);
                assert.equal(ctx.signal.aborted, false);
                return {};
              },
              rotateKeys(_req, ctx: HandlerContext) {
                signals.push(ctx.signal);
                throw new ConnectError("nope", Code.Aborted);
              },
            }),
          {},
        ),
      );
      await client.getJwks({ issuer: Issuer.GAME });
      await client.rotateKeys({ issuer: Issuer.GAME }).catch(() => {});
      return signals.map((s) => ({
        aborted: s.aborted,
        reason: s.reason instanceof ConnectError ? `ConnectError ${Code[s.reason.code]}` : (s.reason as Error).name,
      }));
    });
  });

  it("aborts the handler's signal when the caller's signal aborts, so the handler stops its work", async () => {
    await same(async (build) => {
      let handlerSaw = "";
      const client = createClient(
        GameOAuthService,
        build(
          (router) =>
            router.service(GameOAuthService, {
              async getAuthorization(_req, ctx: HandlerContext) {
                await new Promise<void>((resolve) => ctx.signal.addEventListener("abort", () => resolve(), { once: true }));
                handlerSaw = ctx.signal.reason instanceof ConnectError ? `ConnectError ${Code[ctx.signal.reason.code]}` : String((ctx.signal.reason as Error)?.name);
                return {};
              },
            }),
          {},
        ),
      );
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 20);
      const callerGot = await client.getAuthorization({}, { signal: controller.signal }).then(
        () => "answered",
        (error) => Code[ConnectError.from(error).code],
      );
      for (let i = 0; i < 50 && !handlerSaw; i++) await sleep(10);
      return { callerGot, handlerSaw };
    });
  });

  it("honours a caller's timeout", async () => {
    await same(async (build) => {
      const client = createClient(
        GameOAuthService,
        build(
          (router) =>
            router.service(GameOAuthService, {
              async getAuthorization() {
                await sleep(500);
                return {};
              },
              async *watchAuthorization() {
                await sleep(500);
                yield create(WatchAuthorizationResponseSchema, {});
              },
            }),
          {},
        ),
      );
      const outcome = (call: Promise<unknown>) =>
        call.then(
          () => "answered",
          (error) => Code[ConnectError.from(error).code],
        );
      const unary = await outcome(client.getAuthorization({}, { timeoutMs: 20 }));
      const streamed = await outcome(
        (async () => {
          for await (const _ of client.watchAuthorization({}, { timeoutMs: 20 }));
        })(),
      );
      return { unary, streamed };
    });
  });

  describe("on a real core", () => {
    let t: TestCore;
    before(async () => {
      t = await startTestCore();
    });
    after(async () => {
      await t.close();
    });

    it("answers and fails as the router transport does", async () => {
      const { token } = await t.signUp("transport@example.com");
      const withSession: Interceptor = (next) => (req) => (req.header.set(sessionHeader, token), next(req));
      await same(async (build) => {
        const options = { router: { interceptors: t.core.interceptors }, transport: { interceptors: [withSession] } };
        const auth = createClient(AuthService, build(t.core.routes, options));
        const orgs = createClient(OrganizationsService, build(t.core.routes, options));
        const anonymous = createClient(AuthService, build(t.core.routes, { router: { interceptors: t.core.interceptors } }));
        const session = await auth.getSession({});
        const results: unknown[] = [session.user?.email];
        for (const call of [() => anonymous.getSession({}), () => orgs.createOrganization({ name: "x", slug: "NOT A SLUG" })]) {
          results.push(await call().then(() => "answered", describeError));
        }
        return results;
      });
    });
  });
});
