/**
 * The named limits: those the configuration sets and those fixed here, each with the name that
 * travels in RetryInfo and RateLimit headers.
 */
/** The limits, as the composition root configures them. */
export interface RateLimitConfig {
  /** Calls to user-facing services per window, for each credential (each client IP without one). */
  requestsPerWindow: number;
  requestWindowSeconds: number;
  /** Failed sign-ins per window for one account (by email, whether or not it exists) from one client IP. */
  signInAttemptsPerAccountIp: number;
  /** Failed sign-ins per window from one client IP, across accounts. */
  signInAttemptsPerIp: number;
  signInWindowSeconds: number;
  /** Failed sign-ins per (longer) window for one account from every address together. */
  signInAttemptsPerAccount: number;
  signInAccountWindowSeconds: number;
  /** Sign-ups per window from one client IP. */
  signUpsPerIp: number;
  signUpWindowSeconds: number;
}

/** A named limit: `limit` per `windowSeconds`. The name travels in RetryInfo and RateLimit headers. */
export interface RateLimitPolicy {
  name: string;
  limit: number;
  windowSeconds: number;
}

/**
 * Wrong in-game login codes, each per 10 minutes. Fixed rather than configured: a code has about
 * 40 bits, so these only stop guessing from hammering the issuer; an honest player mistypes a few
 * times at most. The player's UUID and the server are what an agent reports, and whoever runs an
 * agent can invent players and make servers, so guesses are also counted per organization (its
 * plan caps its servers) and across all organizations (which caps many organizations' guesses
 * together, at the price that a flood of wrong codes pauses in-game sign-in for everyone).
 */
export const loginCodePolicies = {
  loginCodePerPlayer: { name: "login_code_player", limit: 5, windowSeconds: 600 },
  loginCodePerServer: { name: "login_code_server", limit: 30, windowSeconds: 600 },
  loginCodePerOrganization: { name: "login_code_organization", limit: 100, windowSeconds: 600 },
  loginCodeGlobal: { name: "login_code_global", limit: 1000, windowSeconds: 600 },
} satisfies Record<string, RateLimitPolicy>;

/**
 * Credentials that match nothing (unknown, expired or revoked sessions, API keys and agent keys),
 * per client IP, per 10 minutes. Fixed: the per-credential limit cannot see a flood that sends a
 * new random credential each time, and an honest client meets an unknown credential a few times
 * at most (an expired session cookie, a revoked key in a script).
 */
export const badCredentialPolicy: RateLimitPolicy = { name: "bad_credential_ip", limit: 60, windowSeconds: 600 };

/**
 * Failed sign-ins from a known device (core/auth/known-devices.ts), per device, per 15 minutes:
 * what such a sign-in is counted under instead of the account's limit over all addresses and the
 * address's limit. Fixed: an owner mistypes a few times, and a stolen device cookie buys this many
 * guesses at most.
 */
export const knownDevicePolicy: RateLimitPolicy = { name: "sign_in_device", limit: 10, windowSeconds: 900 };

/**
 * Activity events that strangers can cause (in-game sign-in refusals, rate-limit lockouts), per
 * subject (a server, a limit's scope), per 10 minutes: past it they are not written, so a flood
 * of refused attempts cannot flood the log (core/activity/throttled.ts). Fixed: an honest
 * server sees a handful.
 */
export const activityEventPolicy: RateLimitPolicy = { name: "activity_event", limit: 20, windowSeconds: 600 };

/**
 * Test sends a person asks for (integrations/testIntegration, pwa/sendTestPush), per user, per 10
 * minutes: each makes Outpost send email, a webhook or pushes to addresses the caller chose, so
 * the deployment's SMTP server and address must not become someone's mass mailer. Fixed: a person
 * setting up a channel tests it a few times.
 */
export const testSendPolicy: RateLimitPolicy = { name: "test_send", limit: 20, windowSeconds: 600 };

/**
 * Invitations a person sends (organizations/inviteMember), per user, per hour: each may email an
 * address the caller chose, so Outpost must not become a way to send mail in bulk. Fixed: a team
 * is invited a few people at a time.
 */
export const invitationPolicy: RateLimitPolicy = { name: "invitation", limit: 50, windowSeconds: 3600 };

/**
 * Verification links a person asks to be mailed again (auth/sendVerificationEmail), per user, per
 * hour: each sends mail to the account's own address, so a stolen session cannot make Outpost mail
 * it in bulk. Fixed: a person asks again once or twice.
 */
export const emailVerificationPolicy: RateLimitPolicy = { name: "email_verification", limit: 5, windowSeconds: 3600 };

export function policiesFor(config: RateLimitConfig) {
  return {
    ...loginCodePolicies,
    invitations: invitationPolicy,
    emailVerifications: emailVerificationPolicy,
    testSends: testSendPolicy,
    activityEvents: activityEventPolicy,
    badCredentialPerIp: badCredentialPolicy,
    requests: { name: "default", limit: config.requestsPerWindow, windowSeconds: config.requestWindowSeconds },
    signInPerAccountIp: { name: "sign_in_account_ip", limit: config.signInAttemptsPerAccountIp, windowSeconds: config.signInWindowSeconds },
    signInPerAccount: { name: "sign_in_account", limit: config.signInAttemptsPerAccount, windowSeconds: config.signInAccountWindowSeconds },
    signInPerIp: { name: "sign_in_ip", limit: config.signInAttemptsPerIp, windowSeconds: config.signInWindowSeconds },
    signInPerDevice: knownDevicePolicy,
    signUpPerIp: { name: "sign_up_ip", limit: config.signUpsPerIp, windowSeconds: config.signUpWindowSeconds },
  } satisfies Record<string, RateLimitPolicy>;
}
