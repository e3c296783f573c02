/**
 * The HTTP status of each failure, as Outpost's HTTP API answers it. Written once, and without
 * dependencies, because two places must agree on it: the edge (edge/errors.ts), which answers with
 * it, and the typed client (clients/typescript), which reads failures over Connect and gives
 * scripts the status the HTTP API would have given for the same failure.
 */

/** The Connect protocol's code names, by code number (1 canceled … 16 unauthenticated); fixed by the protocol. */
const codeNames = [
  "ok",
  "canceled",
  "unknown",
  "invalid_argument",
  "deadline_exceeded",
  "not_found",
  "already_exists",
  "permission_denied",
  "resource_exhausted",
  "failed_precondition",
  "aborted",
  "out_of_range",
  "unimplemented",
  "internal",
  "unavailable",
  "data_loss",
  "unauthenticated",
] as const;

/** snake_case name of a Connect code number, as in the Connect protocol ("invalid_argument"); "unknown" for a number it does not define. */
export function connectCodeName(code: number): string {
  return (code > 0 && codeNames[code]) || "unknown";
}

/** The status of each code that is not a 500 (unknown, internal, data_loss, canceled and anything new are 500). */
const codeStatuses = new Map<string, number>([
  ["invalid_argument", 400],
  ["out_of_range", 400],
  ["unauthenticated", 401],
  ["permission_denied", 403],
  ["not_found", 404],
  ["already_exists", 409],
  ["failed_precondition", 409],
  ["aborted", 409],
  ["resource_exhausted", 429],
  ["unimplemented", 501],
  ["unavailable", 503],
  ["deadline_exceeded", 504],
]);

/**
 * Domain reasons whose HTTP status says more than their Connect code's: a file too large to
 * answer inline is a 413, and an idempotency key sent again with a different request is a 422
 * (the request is well-formed, but not the one the key was first used for).
 */
const reasonStatuses = new Map<string, number>([
  ["too_large", 413],
  ["idempotency_key_reused", 422],
]);

/** The HTTP status for a Connect code, by its name ("not_found" → 404). */
export function codeHttpStatus(code: string): number {
  return codeStatuses.get(code) ?? 500;
}

/** The HTTP status of a failure: its domain reason's where it has one of its own, else its code's. */
export function failureHttpStatus(code: string, reason?: string): number {
  return (reason !== undefined && reasonStatuses.get(reason)) || codeHttpStatus(code);
}
