/**
 * Dashboard sign-up, sign-in and sign-out. The session token never reaches page scripts: it goes
 * straight from core into an HttpOnly cookie.
 */
import { Router } from "@koa/router";
import { createClient, type Transport } from "@connectrpc/connect";
import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { Context } from "koa";
import { IdentityService } from "../gen/outpost/identity/v1/identity_service_pb.js";
import { readFields, stringField } from "./body.ts";
import { clearSessionCookieHeader, readSessionCookie, sessionCookieHeader } from "./cookies.ts";
import type { User } from "../gen/outpost/auth/v1/resources_pb.js";

export interface AccountRoutesOptions {
  transport: Transport;
  /** Cookies get `Secure` when the dashboard is served over https. */
  secureCookies: boolean;
}

function publicUser(user: User | undefined) {
  return user && { id: user.id, email: user.email, name: user.name, platformAdmin: user.platformAdmin };
}

export function createAccountRoutes({ transport, secureCookies }: AccountRoutesOptions): Router {
  const identity = createClient(IdentityService, transport);
  const router = new Router();
  const client = (ctx: Context) => ({ ip: ctx.ip.slice(0, 64), userAgent: (ctx.get("user-agent") || "").slice(0, 512) });
  const startSession = (ctx: Context, token: string, expiresAt: Date) => {
    ctx.set("Set-Cookie", sessionCookieHeader(token, (expiresAt.getTime() - Date.now()) / 1000, secureCookies));
    ctx.set("Cache-Control", "no-store");
  };

  router.post("/sign-up", async (ctx) => {
    const fields = await readFields(ctx);
    const res = await identity.signUp({
      email: stringField(fields, "email"),
      password: stringField(fields, "password"),
      name: stringField(fields, "name"),
      client: client(ctx),
    });
    startSession(ctx, res.sessionToken, timestampDate(res.sessionExpiresAt!));
    ctx.status = 201;
    ctx.body = { user: publicUser(res.user) };
  });

  router.post("/sign-in", async (ctx) => {
    const fields = await readFields(ctx);
    const res = await identity.signIn({
      email: stringField(fields, "email"),
      password: stringField(fields, "password"),
      client: client(ctx),
    });
    startSession(ctx, res.sessionToken, timestampDate(res.sessionExpiresAt!));
    ctx.body = { user: publicUser(res.user) };
  });

  router.post("/sign-out", async (ctx) => {
    const token = readSessionCookie(ctx.req.headers);
    if (token) await identity.signOut({ sessionToken: token });
    ctx.set("Set-Cookie", clearSessionCookieHeader(secureCookies));
    ctx.status = 204;
  });

  return router;
}
