/**
 * Email verification: an account proves it receives mail at its address by opening a link mailed
 * there (or the operator vouches for it with `outpost user verify-email`). Sign-in never needs it;
 * invitations and email alert recipients match verified addresses only, so an account signed up
 * with someone else's address gets nothing meant for that address.
 *
 * The link carries a secret ("opv_…") that is stored hashed, bound to the account and the address
 * it was mailed to, and used once by one conditional statement (verification-queries.ts). A link is
 * made only when mail can be sent (SMTP_URL); without it, the operator's CLI is the way.
 */
import { randomUUID } from "node:crypto";
import type { EntityManager } from "@mikro-orm/postgresql";
import { hashSecret, issueSecret, looksLike } from "../../contract/secrets.ts";
import type { CoreDeps } from "../deps.ts";
import type { MailOutcome } from "../outbound/mailer.ts";
import { recordActivity } from "../activity/record.ts";
import type { Caller } from "../context.ts";
import { fail } from "../errors.ts";
import { findVerification, insertVerification, useVerification } from "./verification-queries.ts";

export type VerificationDeps = Pick<CoreDeps, "config" | "mailer" | "logger" | "statements">;

/** Who asked for a link: the new account itself, the operator, or the signed-in caller. */
type Asker = Caller | { kind: "account"; userId: string; email: string } | "system";

/** A link made in a transaction, to be mailed once it commits. */
export interface PendingVerification {
  userId: string;
  email: string;
  link: string;
  expiresAt: Date;
}

/** Where the link takes its holder: the page on ACCOUNT_BASE_URL that uses it. */
function verificationLink(deps: VerificationDeps, token: string): string {
  return `${new URL(deps.config.accountIssuerUrl).origin}/verify-email?token=${token}`;
}

/**
 * Within the transaction that creates the account (flushed already) or asks again: a new link for
 * its current address, replacing earlier ones, and its `user.email_verification_issued` event.
 * Undefined, and nothing written, when this Outpost cannot send mail.
 */
export async function prepareVerification(
  deps: VerificationDeps,
  tx: EntityManager,
  user: { id: string; email: string },
  asker: Asker,
): Promise<PendingVerification | undefined> {
  if (!deps.mailer.configured) return undefined;
  const secret = issueSecret("emailVerification");
  const expiresAt = await insertVerification(deps.statements.on(tx), { id: randomUUID(), userId: user.id, email: user.email, tokenHash: secret.hash });
  recordActivity(tx, asker, { action: "user.email_verification_issued", targetType: "user", targetId: user.id, details: { email: user.email } });
  return { userId: user.id, email: user.email, link: verificationLink(deps, secret.value), expiresAt };
}

/** After the transaction commits: mails the link. Never throws; a failure is logged and returned. */
export async function mailVerification(deps: VerificationDeps, pending: PendingVerification): Promise<MailOutcome> {
  const outcome = await deps.mailer.send({
    to: [pending.email],
    subject: "Confirm your email address for Outpost",
    text: `Open this link to confirm that ${pending.email} is your address on Outpost:\n${pending.link}\n\nIt works once, for 24 hours. Until you confirm it, you can sign in, but you cannot accept invitations to organizations or receive their email alerts.\n\nIf you did not sign up to Outpost with this address, ignore this message: the account stays unconfirmed.\n`,
  });
  if (!outcome.ok) deps.logger.warn({ error: outcome.error, userId: pending.userId }, "the verification email was not sent");
  return outcome;
}

/**
 * Uses the link's secret, once, in `tx`, with its `user.email_verified` event: the account and
 * address verified. An unknown link is not_found; a used, expired or outdated one
 * failed_precondition, each saying what to do.
 */
export async function useVerificationLink(deps: Pick<CoreDeps, "statements">, tx: EntityManager, token: string): Promise<{ userId: string; email: string }> {
  const invalid = () => fail("not_found", "this verification link is not valid: check that it was copied whole");
  if (!looksLike("emailVerification", token)) throw invalid();
  const query = deps.statements.on(tx);
  const used = await useVerification(query, hashSecret(token));
  if (!used) {
    const row = await findVerification(query, hashSecret(token));
    if (!row) throw invalid();
    if (row.email !== row.current_email) throw fail("failed_precondition", "this link was mailed to an address the account no longer has");
    if (row.status === "used")
      throw fail("failed_precondition", row.verified ? "this link has already been used: the address is verified" : "this link has already been used");
    throw fail("failed_precondition", "this link has expired: sign in and send a new one from your account's Security page");
  }
  recordActivity(
    tx,
    { kind: "account", userId: used.user_id, email: used.email },
    {
      action: "user.email_verified",
      targetType: "user",
      targetId: used.user_id,
      details: { email: used.email, via: "link" },
    },
  );
  return { userId: used.user_id, email: used.email };
}
