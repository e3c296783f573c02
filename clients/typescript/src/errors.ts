/**
 * Every failure of a call, as one error class: the Connect code, the HTTP status Outpost's HTTP
 * API gives the same failure, and what the error's details say (the domain reason, the fields a
 * validation refused, when to try again), so a script branches on fields, never on message text.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { ViolationsSchema } from "@bufbuild/protovalidate/gen/buf/validate/validate_pb.js";
import { ErrorInfoSchema, RetryInfoSchema } from "../../../gen/outpost/errors/v1/errors_pb.js";
import { connectCodeName, failureHttpStatus } from "../../../contract/http-status.ts";
import { requestIdHeader } from "../../../contract/credentials.ts";

/** A field the request got wrong: its path as the API spells it ("serverId", "grant.actions"), and what it must be. */
export interface FieldViolation {
  field: string;
  message: string;
  /** The validation rule, e.g. "string.uuid". */
  rule: string;
}

export interface OutpostErrorInit {
  code: string;
  status?: number;
  reason?: string;
  violations?: FieldViolation[];
  retryAfterMs?: number;
  requestId?: string;
  cause?: unknown;
}

/** A failed call. `instanceof OutpostError` holds for every failure a client method throws. */
export class OutpostError extends Error {
  override readonly name = "OutpostError";
  /** The Connect code's name: "not_found", "invalid_argument", "resource_exhausted", … */
  readonly code: string;
  /** The HTTP status Outpost's HTTP API answers the same failure with (404, 400, 429, 422, …). */
  readonly status: number;
  /** The stable machine-readable cause, where core gives one ("plan_limit_reached", "rate_limited", "agent_offline"). */
  readonly reason?: string;
  /** The fields a validation refused; empty for any other failure. */
  readonly violations: readonly FieldViolation[];
  /** How long Outpost asked the caller to wait before trying again (a rate limit, an outage). */
  readonly retryAfterMs?: number;
  /** Outpost's id of the request (its X-Request-Id), to quote when reporting a failure. */
  readonly requestId?: string;

  constructor(message: string, init: OutpostErrorInit) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.code = init.code;
    this.reason = init.reason;
    this.status = init.status ?? failureHttpStatus(init.code, init.reason);
    this.violations = init.violations ?? [];
    this.retryAfterMs = init.retryAfterMs;
    this.requestId = init.requestId;
  }

  /** The error as an OutpostError: itself if it is one, else read from a ConnectError (or anything thrown). */
  static from(error: unknown): OutpostError {
    if (error instanceof OutpostError) return error;
    const connectError = ConnectError.from(error);
    if (unreachable(connectError)) {
      // As Connect's own servers name it: the request may never have arrived, or its answer was
      // lost on the way back. Retried like an outage, so a mutation only with an idempotency key.
      return new OutpostError(`Outpost could not be reached: ${connectError.rawMessage}`, { code: "unavailable", cause: error });
    }
    const code = connectCodeName(connectError.code);
    const reason = connectError.findDetails(ErrorInfoSchema)[0]?.reason || undefined;
    return new OutpostError(connectError.rawMessage, {
      code,
      reason,
      violations: violations(connectError),
      retryAfterMs: retryAfterMs(connectError),
      requestId: connectError.metadata.get(requestIdHeader) ?? undefined,
      // The ConnectError itself (its metadata and raw details), or what was thrown underneath (a fetch failure).
      cause: error,
    });
  }
}

/**
 * A call that got no answer at all: fetch itself failed (a refused or reset connection, DNS, TLS),
 * which fetch reports as a TypeError in every runtime ("fetch failed", "Failed to fetch", …).
 */
function unreachable(error: ConnectError): boolean {
  return error.code === Code.Unknown && error.cause instanceof TypeError;
}

/** A proto field name as the API spells it (lowerCamelCase), as the HTTP API names fields in its errors. */
const jsonName = (protoName: string) => protoName.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());

function violations(error: ConnectError): FieldViolation[] {
  const [detail] = error.findDetails(ViolationsSchema);
  return (detail?.violations ?? []).map((v) => ({
    field: (v.field?.elements ?? []).map((e) => jsonName(e.fieldName)).join("."),
    message: v.message,
    rule: v.ruleId,
  }));
}

/** From the RetryInfo detail core sends with a rate limit or an outage, else a Retry-After header (seconds or a date). */
function retryAfterMs(error: ConnectError): number | undefined {
  const [info] = error.findDetails(RetryInfoSchema);
  if (info && info.retryAfterSeconds > 0) return info.retryAfterSeconds * 1000;
  const header = error.metadata.get("retry-after");
  if (!header) return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}
