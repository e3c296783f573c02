/**
 * The verification procedures: the link's page uses it (IdentityService.VerifyEmail, for the edge),
 * the operator vouches for an address (IdentityService.MarkEmailVerified, for the CLI), and a
 * signed-in person asks for a new link (AuthService.SendVerificationEmail).
 */
import type { ServiceImpl } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import { IdentityService, MarkEmailVerifiedResponseSchema, VerifyEmailResponseSchema } from "../../gen/outpost/identity/v1/identity_service_pb.js";
import { AuthService, SendVerificationEmailResponseSchema } from "../../gen/outpost/auth/v1/auth_service_pb.js";
import { User } from "../db/entities.ts";
import { entityManager, requireUser } from "../context.ts";
import type { CoreDeps } from "../deps.ts";
import { fail } from "../errors.ts";
import { recordActivity } from "../activity/record.ts";
import { userToProto } from "../convert.ts";
import { inMinutes, rateLimited } from "../ratelimit/rate-limited.ts";
import { mailVerification, prepareVerification, useVerificationLink } from "./email-verification.ts";
import { normalizeEmail } from "./normalize-email.ts";

type IdentityImpl = ServiceImpl<typeof IdentityService>;
type AuthImpl = ServiceImpl<typeof AuthService>;

const verifyEmail =
  (deps: Pick<CoreDeps, "statements">): IdentityImpl["verifyEmail"] =>
  async (req, ctx) => {
    const { email } = await entityManager(ctx).transactional((tx) => useVerificationLink(deps, tx, req.token));
    return create(VerifyEmailResponseSchema, { email });
  };

/** The operator's `outpost user verify-email`: the way to verify without SMTP (the embedded default has none). */
const markEmailVerified =
  (deps: Pick<CoreDeps, "clock">): IdentityImpl["markEmailVerified"] =>
  async (req, ctx) =>
    entityManager(ctx).transactional(async (tx) => {
      const user = await tx.findOne(User, { email: normalizeEmail(req.email) });
      if (!user) throw fail("not_found", `no account with the email ${req.email}`);
      const alreadyVerified = user.emailVerifiedAt !== null && user.emailVerifiedAt !== undefined;
      if (!alreadyVerified) {
        user.emailVerifiedAt = deps.clock.now();
        recordActivity(tx, "system", { action: "user.email_verified", targetType: "user", targetId: user.id, details: { email: user.email, via: "operator" } });
      }
      await tx.flush();
      return create(MarkEmailVerifiedResponseSchema, { user: userToProto(user), alreadyVerified });
    });

export function identityVerificationMethods(deps: CoreDeps): Pick<IdentityImpl, "verifyEmail" | "markEmailVerified"> {
  return { verifyEmail: verifyEmail(deps), markEmailVerified: markEmailVerified(deps) };
}

/** A new link to the caller's own address, at most 5 an hour: it mails nobody else. */
export const sendVerificationEmail =
  (deps: CoreDeps): AuthImpl["sendVerificationEmail"] =>
  async (_req, ctx) => {
    const caller = requireUser(ctx);
    const em = entityManager(ctx);
    const user = await em.findOneOrFail(User, { id: caller.user.id });
    if (user.emailVerifiedAt) throw fail("failed_precondition", `your address ${user.email} is verified already`);
    if (!deps.mailer.configured) {
      throw fail(
        "failed_precondition",
        `this Outpost has no SMTP server configured (SMTP_URL), so it cannot mail a link: ask its operator to run "outpost user verify-email ${user.email}"`,
      );
    }
    const decision = await deps.rateLimits.emailVerifications.consume(`user:${user.id}`);
    if (!decision.allowed) {
      throw rateLimited(
        deps.rateLimits.emailVerifications.policy,
        decision.retryAfterSeconds,
        `too many verification emails; try again in ${inMinutes(decision.retryAfterSeconds)}`,
      );
    }
    const pending = await em.transactional((tx) => prepareVerification(deps, tx, user, caller));
    const outcome = await mailVerification(deps, pending!);
    return create(SendVerificationEmailResponseSchema, { email: user.email, emailSent: outcome.ok, emailError: outcome.error });
  };
