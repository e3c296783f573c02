/**
 * The issuers' errors (both issuers' token, userinfo, revocation and introspection endpoints): one
 * class per OAuth error, each with its HTTP status and the headers it needs, and one translator
 * (`oauthErrorHandler`) that writes any failure as RFC 6749 / 6750 JSON. Failures travel one way,
 * thrown: the edge's own (a malformed request) as these classes, core's as Connect errors, whose
 * `OAuthError` detail names the OAuth error (core/oauth/oauth-failure.ts). Anything else is a 500
 * with no detail; the cause goes to the log only.
 */
import type { Middleware } from "koa";
import { Code, ConnectError } from "@connectrpc/connect";
import { OAuthErrorSchema } from "../../gen/outpost/oauth/v1/oauth_pb.js";
import { rateLimitHeaders, unavailableHeaders } from "../errors.ts";

/** A quoted-string for an auth-param (RFC 9110 §11.2): `\` and `"` escaped, control characters dropped. */
function quoted(value: string): string {
  return `"${value.replace(/[\x00-\x1f\x7f]/g, "").replace(/[\\"]/g, (c) => "\\" + c)}"`;
}

export abstract class OAuthError extends Error {
  /** The RFC 6749 / RFC 6750 error code. */
  abstract readonly error: string;
  abstract readonly status: number;
  readonly description: string;

  constructor(description: string) {
    super(description);
    this.description = description;
  }

  /** Headers the error needs besides the no-store ones (e.g. WWW-Authenticate). */
  headers(_realm: string): Record<string, string> {
    return {};
  }
}

/** A malformed request: missing, repeated or unsupported parameter, both client authentications at once. */
export class InvalidRequest extends OAuthError {
  readonly error = "invalid_request";
  readonly status: number;
  constructor(description: string, status = 400) {
    super(description);
    this.status = status;
  }
}

/** Client authentication failed. 401; `WWW-Authenticate: Basic` names the scheme to retry with. */
export class InvalidClient extends OAuthError {
  readonly error = "invalid_client";
  readonly status = 401;
  override headers(realm: string): Record<string, string> {
    return { "WWW-Authenticate": `Basic realm=${quoted(realm)}, error="invalid_client", error_description=${quoted(this.description)}` };
  }
}

/** The code is invalid, expired, used, or bound to another client, redirect URI or PKCE verifier. */
export class InvalidGrant extends OAuthError {
  readonly error = "invalid_grant";
  readonly status = 400;
}

export class UnauthorizedClient extends OAuthError {
  readonly error = "unauthorized_client";
  readonly status = 400;
}

export class UnsupportedGrantType extends OAuthError {
  readonly error = "unsupported_grant_type";
  readonly status = 400;
}

export class InvalidScope extends OAuthError {
  readonly error = "invalid_scope";
  readonly status = 400;
}

/** An access token that is missing (`description` empty: RFC 6750 §3.1 gives no error code then), unknown, expired or revoked. */
export class InvalidToken extends OAuthError {
  readonly error = "invalid_token";
  readonly status = 401;
  /** True when the request carried no token at all. */
  readonly missing: boolean;
  constructor(description: string, missing = false) {
    super(description);
    this.missing = missing;
  }
  override headers(realm: string): Record<string, string> {
    return {
      "WWW-Authenticate": this.missing
        ? `Bearer realm=${quoted(realm)}`
        : `Bearer realm=${quoted(realm)}, error="invalid_token", error_description=${quoted(this.description)}`,
    };
  }
}

/** Core's rate limit. */
export class RateLimited extends OAuthError {
  readonly error = "temporarily_unavailable";
  readonly status = 429;
  readonly retryAfter: number;
  constructor(description: string, retryAfter = 60) {
    super(description);
    this.retryAfter = retryAfter;
  }
  override headers(): Record<string, string> {
    return { "Retry-After": String(this.retryAfter) };
  }
}

/** Outpost cannot serve the request for now (its database cannot be reached): 503 and when to retry. */
export class TemporarilyUnavailable extends OAuthError {
  readonly error = "temporarily_unavailable";
  readonly status = 503;
  readonly retryAfter: number;
  constructor(description: string, retryAfter: number) {
    super(description);
    this.retryAfter = retryAfter;
  }
  override headers(): Record<string, string> {
    return { "Retry-After": String(this.retryAfter) };
  }
}

const byCode: Record<string, new (description: string) => OAuthError> = {
  invalid_request: InvalidRequest,
  invalid_client: InvalidClient,
  invalid_grant: InvalidGrant,
  unauthorized_client: UnauthorizedClient,
  unsupported_grant_type: UnsupportedGrantType,
  invalid_scope: InvalidScope,
  invalid_token: InvalidToken,
};

/**
 * A Connect error of a core call, as an OAuth error where one fits: core's refusal by its
 * `OAuthError` detail, invalid input invalid_request, a rate limit 429, a database out of reach
 * 503 with Retry-After. Anything else stays as it is (a 500; so does an OAuth error code this
 * edge does not know, a bug).
 */
export function oauthErrorFromConnect(error: unknown): unknown {
  if (!(error instanceof ConnectError)) return error;
  const [refused] = error.findDetails(OAuthErrorSchema);
  if (refused) {
    const ErrorClass = byCode[refused.error];
    return ErrorClass ? new ErrorClass(refused.description) : error;
  }
  if (error.code === Code.InvalidArgument || error.code === Code.OutOfRange) return new InvalidRequest(error.rawMessage);
  if (error.code === Code.ResourceExhausted) {
    // rateLimitHeaders gives whole seconds, at least 1; without them RateLimited's default holds.
    const wait = rateLimitHeaders(error)?.["Retry-After"];
    return new RateLimited(error.rawMessage || "too many requests; retry later", wait ? Number(wait) : undefined);
  }
  const retryAfter = unavailableHeaders(error)?.["Retry-After"];
  if (error.code === Code.Unavailable && retryAfter) return new TemporarilyUnavailable(error.rawMessage, Number(retryAfter));
  return error;
}

/**
 * The translator for the token, userinfo, revocation and introspection endpoints, the one place a
 * failure becomes an answer: an OAuthError (the edge's own, or core's refusal) becomes `{error,
 * error_description}` with its status and headers; anything else a 500 `{error: "server_error"}`,
 * logged. Every answer, success or not, is `Cache-Control: no-store` (RFC 6749 §5.1).
 */
export function oauthErrorHandler(realm: string): Middleware {
  return async (ctx, next) => {
    ctx.set("Cache-Control", "no-store");
    ctx.set("Pragma", "no-cache");
    try {
      await next();
    } catch (caught) {
      const error = oauthErrorFromConnect(caught);
      if (error instanceof OAuthError) {
        ctx.status = error.status;
        for (const [name, value] of Object.entries(error.headers(realm))) ctx.set(name, value);
        ctx.body = { error: error.error, error_description: error.description };
        return;
      }
      ctx.state.log.error({ err: caught }, "issuer request failed");
      ctx.status = 500;
      ctx.body = { error: "server_error" };
    }
  };
}
