import type { ServiceImpl } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import type { EntityManager } from "@mikro-orm/postgresql";
import {
  CreateUserResponseSchema,
  IdentityService,
  IssueApiKeyResponseSchema,
  SignInResponseSchema,
  SignOutResponseSchema,
  SignUpResponseSchema,
  type ClientInfo,
} from "../../gen/outpost/identity/v1/identity_service_pb.js";
import { Session, User } from "../db/entities.ts";
import { entityManager } from "../context.ts";
import type { CoreDeps } from "../deps.ts";
import { fail } from "../errors.ts";
import { hashPassword, verifyPassword } from "../auth/passwords.ts";
import { startSession } from "../auth/sessions.ts";
import { createApiKey } from "../auth/api-keys.ts";
import { hashSecret, looksLike } from "../../contract/secrets.ts";
import { recordActivity } from "../activity/record.ts";
import { apiKeyToProto, userToProto } from "../convert.ts";
import { countSignInAttempt } from "../ratelimit/sign-in-limits.ts";

/** Emails are compared case-insensitively: stored and looked up lower-cased. */
export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

function clientDetails(client: ClientInfo | undefined): Record<string, string> {
  const details: Record<string, string> = {};
  if (client?.ip) details.ip = client.ip;
  if (client?.userAgent) details.userAgent = client.userAgent;
  return details;
}

/** Accounts and dashboard sessions, for the edge (and the operator's CLI) only. */
export function createIdentityService({ config, clock, rateLimits }: CoreDeps): ServiceImpl<typeof IdentityService> {
  async function createAccount(em: EntityManager, email: string, password: string, name: string, platformAdmin: boolean) {
    const normalized = normalizeEmail(email);
    if (await em.count(User, { email: normalized })) throw fail("email_taken", "an account with this email already exists");
    return em.create(User, { email: normalized, name, passwordHash: await hashPassword(password), platformAdmin });
  }

  return {
    async signUp(req, ctx) {
      const em = entityManager(ctx);
      return em.transactional(async (tx) => {
        const user = await createAccount(tx, req.email, req.password, req.name, false);
        const { session, token } = startSession(tx, user, clock.now(), config.sessionTtlSeconds);
        recordActivity(tx, { kind: "account", userId: user.id, email: user.email }, {
          action: "user.signed_up",
          targetType: "user",
          targetId: user.id,
          details: clientDetails(req.client),
        });
        await tx.flush();
        return create(SignUpResponseSchema, {
          user: userToProto(user),
          sessionToken: token,
          sessionExpiresAt: timestampFromDate(session.expiresAt),
        });
      });
    },

    async signIn(req, ctx) {
      const em = entityManager(ctx);
      // Rate limits: failed attempts per account and per client IP, refused before any password check.
      const attempt = await countSignInAttempt(rateLimits, normalizeEmail(req.email), req.client?.ip);
      const user = await em.findOne(User, { email: normalizeEmail(req.email) }, { populate: ["passwordHash"] });
      if (attempt.refusal) {
        if (user && attempt.tripped) {
          await em.transactional(async (tx) => {
            recordActivity(tx, { kind: "account", userId: user.id, email: user.email }, {
              action: "user.sign_in_throttled",
              targetType: "user",
              targetId: user.id,
              details: { ...clientDetails(req.client), policy: attempt.policy ?? "" },
            });
          });
        }
        throw attempt.refusal;
      }
      const valid = await verifyPassword(user?.passwordHash, req.password);
      if (!user || !valid) {
        // The failure is recorded in a transaction of its own, committed before the refusal.
        if (user) {
          await em.transactional(async (tx) => {
            recordActivity(tx, { kind: "account", userId: user.id, email: user.email }, {
              action: "user.sign_in_failed",
              targetType: "user",
              targetId: user.id,
              details: clientDetails(req.client),
            });
          });
        }
        throw fail("invalid_credentials", "invalid email or password");
      }
      const response = await em.transactional(async (tx) => {
        const { session, token } = startSession(tx, user, clock.now(), config.sessionTtlSeconds);
        recordActivity(tx, { kind: "account", userId: user.id, email: user.email }, {
          action: "user.signed_in",
          targetType: "session",
          targetId: session.id,
          details: clientDetails(req.client),
        });
        await tx.flush();
        return create(SignInResponseSchema, {
          user: userToProto(user),
          sessionToken: token,
          sessionExpiresAt: timestampFromDate(session.expiresAt),
        });
      });
      await attempt.succeeded();
      return response;
    },

    async signOut(req, ctx) {
      const em = entityManager(ctx);
      if (looksLike("session", req.sessionToken)) {
        await em.transactional(async (tx) => {
          const session = await tx.findOne(Session, { tokenHash: hashSecret(req.sessionToken) }, { populate: ["user"] });
          if (!session) return;
          recordActivity(tx, { kind: "account", userId: session.user.id, email: session.user.email }, {
            action: "user.signed_out",
            targetType: "session",
            targetId: session.id,
          });
          tx.remove(session);
        });
      }
      return create(SignOutResponseSchema, {});
    },

    async createUser(req, ctx) {
      const em = entityManager(ctx);
      return em.transactional(async (tx) => {
        const user = await createAccount(tx, req.email, req.password, req.name, req.platformAdmin);
        recordActivity(tx, "system", {
          action: "user.created",
          targetType: "user",
          targetId: user.id,
          details: { email: user.email, platformAdmin: String(user.platformAdmin) },
        });
        await tx.flush();
        return create(CreateUserResponseSchema, { user: userToProto(user) });
      });
    },

    async issueApiKey(req, ctx) {
      const em = entityManager(ctx);
      return em.transactional(async (tx) => {
        const user = await tx.findOne(User, { email: normalizeEmail(req.email) });
        if (!user) throw fail("not_found", `no account with the email ${req.email}`);
        const { apiKey, key } = createApiKey(tx, user, req.name, req.expiresAt ? timestampDate(req.expiresAt) : null);
        recordActivity(tx, "system", {
          action: "api_key.created",
          targetType: "api_key",
          targetId: apiKey.id,
          details: { name: apiKey.name, prefix: apiKey.prefix, userId: user.id },
        });
        await tx.flush();
        return create(IssueApiKeyResponseSchema, { apiKey: apiKeyToProto(apiKey), key });
      });
    },
  };
}
