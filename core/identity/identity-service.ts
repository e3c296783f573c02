import type { ServiceImpl } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import { timestampDate, timestampFromDate } from "@bufbuild/protobuf/wkt";
import { UniqueConstraintViolationException } from "@mikro-orm/core";
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
import type { Passwords } from "../auth/passwords.ts";
import { fail } from "../errors.ts";
import { startSession } from "../auth/sessions.ts";
import { presentedCredential } from "../auth/credential-store.ts";
import { createApiKey } from "../auth/api-keys.ts";
import { hashSecret, looksLike } from "../../contract/secrets.ts";
import { recordActivity } from "../activity/record.ts";
import { recordLockout } from "../activity/lockouts.ts";
import type { ActivityAction } from "../activity/kinds.ts";
import { apiKeyToProto, userToProto } from "../convert.ts";
import { countSignInAttempt } from "../ratelimit/sign-in-limits.ts";
import { countSignUp } from "../ratelimit/sign-up-limits.ts";
import { normalizeEmail } from "./normalize-email.ts";
import { mailVerification, prepareVerification, type PendingVerification } from "./email-verification.ts";
import { identityVerificationMethods } from "./verification-methods.ts";

export { normalizeEmail };

function clientDetails(client: ClientInfo | undefined): Record<string, string> {
  const details: Record<string, string> = {};
  if (client?.ip) details.ip = client.ip;
  if (client?.userAgent) details.userAgent = client.userAgent;
  return details;
}

/** An account acting as itself, before it has a caller (sign-up, sign-in). */
function asAccount(user: User) {
  return { kind: "account" as const, userId: user.id, email: user.email };
}

type Impl = ServiceImpl<typeof IdentityService>;
type SessionDeps = Pick<CoreDeps, "config" | "clock" | "knownDevices">;

const emailTaken = () => fail("email_taken", "an account with this email already exists");

/**
 * A new account's fields, the password hashed before any transaction opens: a hash can wait in
 * the hashing queue, and must hold no database connection meanwhile (the embedded database has
 * one). A taken email is refused first, so it costs no hash.
 */
async function accountFields(passwords: Passwords, em: EntityManager, email: string, password: string, name: string, platformAdmin: boolean) {
  const normalized = normalizeEmail(email);
  if (await em.count(User, { email: normalized })) throw emailTaken();
  return { email: normalized, name, passwordHash: await passwords.hash(password), platformAdmin };
}

/** Creates the account in `work`'s transaction; one created meanwhile with its email (the unique index) is email_taken. */
async function creatingAccount<T>(em: EntityManager, work: (tx: EntityManager) => Promise<T>): Promise<T> {
  try {
    return await em.transactional(work);
  } catch (error) {
    if (error instanceof UniqueConstraintViolationException) throw emailTaken();
    throw error;
  }
}

/** Whole seconds from `now` (the database's clock) to `at`: a cookie's Max-Age. */
const secondsUntil = (at: Date, now: Date) => Math.max(0, Math.floor((at.getTime() - now.getTime()) / 1000));

/**
 * Starts a session for `user` and records how: what sign-up and sign-in both answer, with a
 * known-device token for this browser (the device it already was, when it presented one).
 */
async function openSession(deps: SessionDeps, tx: EntityManager, user: User, action: ActivityAction, client: ClientInfo | undefined, knownDevice?: string) {
  const now = deps.clock.now();
  const { session, token } = startSession(tx, user, now, deps.config.sessionTtlSeconds, client);
  const details = { ...clientDetails(client), ...(knownDevice !== undefined && { knownDevice: "true" }) };
  recordActivity(tx, asAccount(user), { action, targetType: "session", targetId: session.id, details });
  await tx.flush();
  const device = deps.knownDevices.issue(user.email, now, knownDevice);
  return {
    user: userToProto(user),
    sessionToken: token,
    sessionExpiresAt: timestampFromDate(session.expiresAt),
    deviceToken: device.token,
    deviceTokenExpiresAt: timestampFromDate(device.expiresAt),
    sessionMaxAgeSeconds: secondsUntil(session.expiresAt, now),
    deviceTokenMaxAgeSeconds: secondsUntil(device.expiresAt, now),
  };
}

const signUp =
  (deps: CoreDeps): Impl["signUp"] =>
  async (req, ctx) => {
    await countSignUp(deps.rateLimits, req.client?.ip, (lockout) => recordLockout(deps, lockout));
    const em = entityManager(ctx);
    const fields = await accountFields(deps.passwords, em, req.email, req.password, req.name, false);
    let pending: PendingVerification | undefined;
    const response = await creatingAccount(em, async (tx) => {
      const user = tx.create(User, fields);
      const session = await openSession(deps, tx, user, "user.signed_up", req.client);
      pending = await prepareVerification(deps, tx, user, asAccount(user));
      return create(SignUpResponseSchema, session);
    });
    // Mailed once the account exists; a failure to send leaves it unverified, with a new link a click away.
    if (pending) await mailVerification(deps, pending);
    return response;
  };

const signIn =
  (deps: CoreDeps): Impl["signIn"] =>
  async (req, ctx) => {
    const { rateLimits, passwords, knownDevices, clock } = deps;
    const em = entityManager(ctx);
    const email = normalizeEmail(req.email);
    // A browser that signed in to this account before (core/auth/known-devices.ts).
    const knownDevice = req.deviceToken ? knownDevices.verify(req.deviceToken, email, clock.now()) : undefined;
    // Rate limits: failed attempts per account and client IP, per account, and per client IP (or,
    // from a known device, per device instead of the last two), refused before any password check.
    const attempt = await countSignInAttempt(rateLimits, email, req.client?.ip, knownDevice);
    const user = await em.findOne(User, { email }, { populate: ["passwordHash"] });
    // Refusals are recorded in a transaction of their own, committed before the refusal.
    const refusedAttempt = (action: ActivityAction, details: Record<string, string>) =>
      em.transactional(async (tx) => {
        if (knownDevice !== undefined) details.knownDevice = "true";
        if (user) recordActivity(tx, asAccount(user), { action, targetType: "user", targetId: user.id, details });
      });
    if (attempt.refusal) {
      if (attempt.tripped) await refusedAttempt("user.sign_in_throttled", { ...clientDetails(req.client), policy: attempt.policy ?? "" });
      throw attempt.refusal;
    }
    // Too busy to check it: not a failed attempt, so no count keeps it.
    const valid = await passwords.verify(user?.passwordHash, req.password).catch(async (error: unknown) => {
      await attempt.notChecked();
      throw error;
    });
    if (!user || !valid) {
      await refusedAttempt("user.sign_in_failed", clientDetails(req.client));
      throw fail("invalid_credentials", "invalid email or password");
    }
    const response = await em.transactional(async (tx) => create(SignInResponseSchema, await openSession(deps, tx, user, "user.signed_in", req.client, knownDevice)));
    await attempt.succeeded();
    return response;
  };

const signOut: Impl["signOut"] = async (_req, ctx) => {
  const em = entityManager(ctx);
  // The session to end is the one in the session header, as on every call (this service takes
  // no credential in the auth interceptor: signing out an unknown session is not an error).
  const token = presentedCredential(ctx.requestHeader).session ?? "";
  if (looksLike("session", token)) {
    await em.transactional(async (tx) => {
      const session = await tx.findOne(Session, { tokenHash: hashSecret(token) }, { populate: ["user"] });
      if (!session) return;
      recordActivity(tx, asAccount(session.user), { action: "user.signed_out", targetType: "session", targetId: session.id });
      tx.remove(session);
    });
  }
  return create(SignOutResponseSchema, {});
};

const createUser =
  (deps: CoreDeps): Impl["createUser"] =>
  async (req, ctx) => {
    const em = entityManager(ctx);
    const fields = await accountFields(deps.passwords, em, req.email, req.password, req.name, req.platformAdmin);
    let pending: PendingVerification | undefined;
    const response = await creatingAccount(em, async (tx) => {
      const user = tx.create(User, fields);
      recordActivity(tx, "system", {
        action: "user.created",
        targetType: "user",
        targetId: user.id,
        details: { email: user.email, platformAdmin: String(user.platformAdmin) },
      });
      await tx.flush();
      pending = await prepareVerification(deps, tx, user, "system");
      return create(CreateUserResponseSchema, { user: userToProto(user) });
    });
    if (pending) await mailVerification(deps, pending);
    return response;
  };

const issueApiKey: Impl["issueApiKey"] = async (req, ctx) => {
  return entityManager(ctx).transactional(async (tx) => {
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
};

/** Accounts and dashboard sessions, for the edge (and the operator's CLI) only. */
export function createIdentityService(deps: CoreDeps): Impl {
  return { signUp: signUp(deps), signIn: signIn(deps), signOut, createUser: createUser(deps), issueApiKey, ...identityVerificationMethods(deps) };
}
