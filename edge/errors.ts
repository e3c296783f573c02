import { Code, ConnectError } from "@connectrpc/connect";
import { ViolationsSchema } from "@bufbuild/protovalidate/gen/buf/validate/validate_pb.js";
import { ErrorInfoSchema, RetryInfoSchema } from "../gen/outpost/errors/v1/errors_pb.js";
import { codeHttpStatus, connectCodeName, failureHttpStatus } from "../contract/http-status.ts";

/** The HTTP status for each Connect code, as the HTTP API and the account endpoints answer (contract/http-status.ts). */
export function httpStatus(code: Code): number {
  return codeHttpStatus(connectCodeName(code));
}

/** snake_case name of a Connect code, as in the Connect protocol ("invalid_argument"). */
export function codeName(code: Code): string {
  return connectCodeName(code);
}

/** An answer decided by the edge itself, for statuses without a Connect code (405, 413, 415). */
export class HttpError extends Error {
  readonly status: number;
  readonly code: string;
  readonly headers: Record<string, string>;

  constructor(status: number, code: string, message: string, headers: Record<string, string> = {}) {
    super(message);
    this.status = status;
    this.code = code;
    this.headers = headers;
  }
}

export interface ErrorBody {
  code: string;
  status: number;
  message: string;
  reason?: string;
  requestId?: string;
}

/**
 * The JSON body for an error. A 5xx says only that the request failed, with the request id to
 * find the rest in the log; unless it is a domain error (it has a reason, and its message is
 * written for callers: a game server's agent that did not answer in time).
 */
export function errorBody(error: unknown, requestId: string): ErrorBody {
  if (error instanceof HttpError) return { code: error.code, status: error.status, message: error.message };
  const connectError = ConnectError.from(error);
  const [info] = connectError.findDetails(ErrorInfoSchema);
  const status = failureHttpStatus(codeName(connectError.code), info?.reason);
  if (status >= 500 && !info?.reason) {
    return { code: codeName(connectError.code), status, message: "the request failed; quote the request id when reporting it", requestId };
  }
  return {
    code: codeName(connectError.code),
    status,
    message: connectError.rawMessage,
    ...(info?.reason && { reason: info.reason }),
  };
}

/**
 * Whether a failure is one to log as an error: a 5xx with no domain reason, i.e. Outpost's own
 * fault. A domain 5xx explains itself (the database cannot be reached, an agent did not answer in
 * time): core logs those once in a while, and the request log has each one's status.
 */
export function isUnexplainedFailure(error: unknown): boolean {
  if (error instanceof HttpError) return error.status >= 500;
  const connectError = ConnectError.from(error);
  return httpStatus(connectError.code) >= 500 && !connectError.findDetails(ErrorInfoSchema)[0]?.reason;
}

/** A structured-field string (RFC 8941): quoted, with `\` and `"` escaped. */
function sfString(value: string): string {
  return `"${value.replace(/[\\"]/g, (c) => "\\" + c)}"`;
}

/**
 * The headers of a 429 from a rate-limited core call (one with a RetryInfo detail), or undefined
 * for any other error: `Retry-After` in whole seconds, and `RateLimit-Policy` / `RateLimit` as
 * draft-ietf-httpapi-ratelimit-headers writes them, e.g. `"default";q=600;w=60` and
 * `"default";r=0;t=42`.
 */
export function rateLimitHeaders(error: unknown): Record<string, string> | undefined {
  if (!(error instanceof ConnectError) || error.code !== Code.ResourceExhausted) return undefined;
  const [retry] = error.findDetails(RetryInfoSchema);
  if (!retry) return undefined;
  const seconds = retryAfterSeconds(retry.retryAfterSeconds);
  const policy = sfString(retry.policy || "default");
  return {
    "Retry-After": String(seconds),
    "RateLimit-Policy": `${policy};q=${retry.limit};w=${retry.windowSeconds}`,
    RateLimit: `${policy};r=0;t=${seconds}`,
  };
}

/** `Retry-After` of a 503 that says when to come back (Outpost cannot reach its database), or undefined. */
export function unavailableHeaders(error: unknown): Record<string, string> | undefined {
  if (!(error instanceof ConnectError) || error.code !== Code.Unavailable) return undefined;
  const [retry] = error.findDetails(RetryInfoSchema);
  return retry ? { "Retry-After": String(retryAfterSeconds(retry.retryAfterSeconds)) } : undefined;
}

/** Whatever tells the caller when to try again: a rate limit's headers, or a 503's Retry-After. */
export function retryHeaders(error: unknown): Record<string, string> | undefined {
  return rateLimitHeaders(error) ?? unavailableHeaders(error);
}

const retryAfterSeconds = (seconds: number) => Math.max(1, Math.ceil(seconds));

/** A proto field name as the API spells it (lowerCamelCase). */
export function jsonName(protoName: string): string {
  return protoName.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/** Field violations from a validation failure, by their API (JSON) field paths. */
export function violationDetails(error: unknown): Array<{ field: string; message: string; rule: string }> | undefined {
  if (!(error instanceof ConnectError)) return undefined;
  const [violations] = error.findDetails(ViolationsSchema);
  if (!violations) return undefined;
  return violations.violations.map((v) => ({
    field: (v.field?.elements ?? []).map((e) => jsonName(e.fieldName)).join("."),
    message: v.message,
    rule: v.ruleId,
  }));
}
