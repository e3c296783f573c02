/**
 * The caller's dashboard sessions and password, part of AuthService. Listing is open to API keys;
 * ending sessions and changing the password take a signed-in session, so that a leaked key can
 * neither sign its owner out nor take the account over.
 */
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  AuthService,
  ChangePasswordResponseSchema,
  ListSessionsResponseSchema,
  RevokeOtherSessionsResponseSchema,
  RevokeSessionResponseSchema,
} from "../../gen/outpost/auth/v1/auth_service_pb.js";
import { SessionSchema, type Session as SessionMessage } from "../../gen/outpost/auth/v1/resources_pb.js";
import { clientIpHeader } from "../../contract/credentials.ts";
import { Session, User } from "../db/entities.ts";
import { entityManager, requireUser, type UserCaller } from "../context.ts";
import type { CoreDeps } from "../deps.ts";
import { fail, fieldFail } from "../errors.ts";
import { recordActivity } from "../activity/record.ts";
import type { ActivityAction } from "../activity/kinds.ts";
import { countSignInAttempt } from "../ratelimit/sign-in-limits.ts";
import { sessionEndsAt } from "./sessions.ts";

type SessionMethods = Pick<ServiceImpl<typeof AuthService>, "listSessions" | "revokeSession" | "revokeOtherSessions" | "changePassword">;

/** The caller, when they call with a session; permission_denied with an API key. */
function signedIn(ctx: HandlerContext, what: string): UserCaller {
  const caller = requireUser(ctx);
  if (caller.credential.kind !== "session") {
    throw fail("permission_denied", `${what} takes a signed-in session (the dashboard's Security page), not an API key`);
  }
  return caller;
}

/** The client IP the edge reported for this call, for the activity log and the sign-in limits. */
function clientIp(ctx: HandlerContext): string | undefined {
  return ctx.requestHeader.get(clientIpHeader) || undefined;
}

const ipDetails = (ip: string | undefined): Record<string, string> => (ip ? { ip } : {});

type Impl = ServiceImpl<typeof AuthService>;

function sessionToProto(session: Session, caller: UserCaller, idleSeconds: number): SessionMessage {
  return create(SessionSchema, {
    id: session.id,
    createdAt: timestampFromDate(session.createdAt),
    lastUsedAt: timestampFromDate(session.lastUsedAt),
    expiresAt: timestampFromDate(sessionEndsAt(session, idleSeconds)),
    ip: session.ip ?? "",
    userAgent: session.userAgent ?? "",
    current: caller.credential.kind === "session" && caller.credential.id === session.id,
  });
}

const listSessions =
  ({ clock, config }: Pick<CoreDeps, "clock" | "config">): Impl["listSessions"] =>
  async (_req, ctx) => {
    const caller = requireUser(ctx);
    const now = clock.now();
    const sessions = await entityManager(ctx).find(
      Session,
      { user: caller.user.id, expiresAt: { $gt: now }, lastUsedAt: { $gt: new Date(now.getTime() - config.sessionIdleSeconds * 1000) } },
      { orderBy: { lastUsedAt: "desc", id: "asc" } },
    );
    return create(ListSessionsResponseSchema, { sessions: sessions.map((s) => sessionToProto(s, caller, config.sessionIdleSeconds)) });
  };

const revokeSession: Impl["revokeSession"] = async (req, ctx) => {
  const caller = signedIn(ctx, "ending a session");
  await entityManager(ctx).transactional(async (tx) => {
    const notFound = () => fail("not_found", "session not found");
    const session = await tx.findOne(Session, { id: req.sessionId, user: caller.user.id });
    if (!session) throw notFound();
    // Deleted by id and counted, so of two revokes at once only one succeeds and records it.
    if (!(await tx.nativeDelete(Session, { id: session.id }))) throw notFound();
    recordActivity(tx, caller, {
      action: "session.revoked",
      targetType: "session",
      targetId: session.id,
      details: {
        ...ipDetails(session.ip ?? undefined),
        ...(session.userAgent && { userAgent: session.userAgent }),
        current: String(session.id === caller.credential.id),
      },
    });
  });
  return create(RevokeSessionResponseSchema, {});
};

const revokeOtherSessions: Impl["revokeOtherSessions"] = async (_req, ctx) => {
  const caller = signedIn(ctx, "ending sessions");
  const revoked = await entityManager(ctx).transactional(async (tx) => {
    const count = await tx.nativeDelete(Session, { user: caller.user.id, id: { $ne: caller.credential.id } });
    recordActivity(tx, caller, {
      action: "user.other_sessions_revoked",
      targetType: "user",
      targetId: caller.user.id,
      details: { count: String(count), ...ipDetails(clientIp(ctx)) },
    });
    return count;
  });
  return create(RevokeOtherSessionsResponseSchema, { revoked });
};

const changePassword =
  ({ rateLimits, passwords }: Pick<CoreDeps, "rateLimits" | "passwords">): Impl["changePassword"] =>
  async (req, ctx) => {
    const caller = signedIn(ctx, "changing the password");
    const em = entityManager(ctx);
    const ip = clientIp(ctx);
    // The current password is a password check like a sign-in's: the same limits, counted alike.
    const attempt = await countSignInAttempt(rateLimits, caller.user.email, ip);
    const record = (action: ActivityAction, details: Record<string, string>) =>
      em.transactional(async (tx) => recordActivity(tx, caller, { action, targetType: "user", targetId: caller.user.id, details }));
    if (attempt.refusal) {
      if (attempt.tripped) await record("user.sign_in_throttled", { ...ipDetails(ip), policy: attempt.policy ?? "" });
      throw attempt.refusal;
    }
    const user = await em.findOneOrFail(User, { id: caller.user.id }, { populate: ["passwordHash"], refresh: true });
    const valid = await passwords.verify(user.passwordHash, req.currentPassword).catch(async (error: unknown) => {
      await attempt.notChecked();
      throw error;
    });
    if (!valid) {
      await record("user.password_change_failed", ipDetails(ip));
      throw fieldFail([{ field: "current_password", message: "the current password is wrong" }], "wrong_password");
    }
    await attempt.succeeded();
    const passwordHash = await passwords.hash(req.newPassword);
    const endedSessions = await em.transactional(async (tx) => {
      await tx.nativeUpdate(User, { id: user.id }, { passwordHash });
      // Whoever else is signed in as this user — perhaps with the old password — is signed out.
      // API keys stay: the user made each one on purpose, and sees and revokes them on the same page.
      const ended = await tx.nativeDelete(Session, { user: user.id, id: { $ne: caller.credential.id } });
      recordActivity(tx, caller, {
        action: "user.password_changed",
        targetType: "user",
        targetId: user.id,
        details: { endedSessions: String(ended), ...ipDetails(ip) },
      });
      return ended;
    });
    return create(ChangePasswordResponseSchema, { endedSessions });
  };

export function createSessionMethods(deps: CoreDeps): SessionMethods {
  return { listSessions: listSessions(deps), revokeSession, revokeOtherSessions, changePassword: changePassword(deps) };
}
