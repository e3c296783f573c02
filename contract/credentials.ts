/**
 * How a credential, and the facts about the request it came with, travel to core: shared by core,
 * the edge and the agent (all of which may import this folder and gen/, as the contract).
 */

/** A dashboard session token; the edge copies it here from the HttpOnly cookie. */
export const sessionHeader = "x-outpost-session";

/** A user API key, as scripts send it. */
export const apiKeyHeader = "x-api-key";

/** A game server's agent key, accepted only by the agent service. */
export const agentKeyHeader = "x-outpost-agent-key";

/** The dashboard session cookie. */
export const sessionCookie = "outpost_session";

/**
 * The known-device cookie: set at each sign-in, it marks the browser as one that signed in to that
 * account, so strangers' failed guesses do not lock it out (core/auth/known-devices.ts).
 */
export const knownDeviceCookie = "outpost_device";

/**
 * The client's address as the edge saw it, for per-IP rate limits. The edge always overwrites it,
 * so a caller cannot choose its own.
 */
export const clientIpHeader = "x-outpost-client-ip";

/**
 * The edge's id of the request a call serves (echoed to the client as X-Request-Id), so that
 * core's log line about a failure names the request the person quotes.
 */
export const requestIdHeader = "x-request-id";

/**
 * A mutation's idempotency key, chosen by the caller (1–255 printable ASCII characters): a retry
 * with the same key gets the first request's answer instead of running again (core/idempotency).
 */
export const idempotencyKeyHeader = "idempotency-key";

/** Set on an answer that is a replay of an earlier request's with the same idempotency key. */
export const idempotentReplayedHeader = "idempotent-replayed";
