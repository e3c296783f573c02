import { Code, ConnectError } from "@connectrpc/connect";
import { create, type DescMessage, type MessageInitShape } from "@bufbuild/protobuf";
import { ViolationsSchema } from "@bufbuild/protovalidate/gen/buf/validate/validate_pb.js";
import { ErrorInfoSchema } from "../gen/outpost/errors/v1/errors_pb.js";

/**
 * The closed list of domain errors, each with the Connect code that fits its meaning. The reason
 * travels to callers as an {@link ErrorInfoSchema} detail; the edge maps codes to HTTP statuses.
 */
export const domainErrors = {
  /** No credential, or one that is unknown, expired or revoked. */
  unauthenticated: Code.Unauthenticated,
  /** Email and password do not match an account (deliberately one answer for both). */
  invalid_credentials: Code.Unauthenticated,
  /** A signed-in user's current password, asked again (changing it), is wrong. */
  wrong_password: Code.InvalidArgument,
  /** More than one credential in one request. */
  ambiguous_credential: Code.InvalidArgument,
  invalid_argument: Code.InvalidArgument,
  /** Unknown, or not visible to the caller (another organization's resources look absent). */
  not_found: Code.NotFound,
  /** A member whose role or grants do not allow the action. */
  permission_denied: Code.PermissionDenied,
  /** The caller is not a platform admin. */
  platform_admin_required: Code.PermissionDenied,
  email_taken: Code.AlreadyExists,
  slug_taken: Code.AlreadyExists,
  already_member: Code.AlreadyExists,
  grant_exists: Code.AlreadyExists,
  /** The member already has a pending access request for this server. */
  request_pending: Code.AlreadyExists,
  /** The address already has a pending invitation to the organization. */
  invitation_pending: Code.AlreadyExists,
  /** The organization's plan allows no more of this resource. */
  plan_limit_reached: Code.FailedPrecondition,
  /** The feature is turned off in the organization (the assistant, or one of its tool families). */
  feature_disabled: Code.FailedPrecondition,
  /** An owner or admin pressed the assistant's emergency stop: no tool action or question passes. */
  emergency_stop: Code.FailedPrecondition,
  /** The organization has more servers than its plan allows, and this is one of the newest (core/servers/frozen.ts). */
  server_frozen: Code.FailedPrecondition,
  /** The organization would be left without an owner. */
  last_owner: Code.FailedPrecondition,
  /** An update names a version of the resource that is no longer its current one (optimistic concurrency). */
  version_conflict: Code.Aborted,
  /** The action does not fit the resource's current state. */
  failed_precondition: Code.FailedPrecondition,
  /** The caller's email address is not verified yet (accepting an invitation needs it). */
  email_unverified: Code.FailedPrecondition,
  /** The server's agent is not connected (what was asked never reached it). */
  agent_offline: Code.FailedPrecondition,
  /** The server's agent cannot run console commands. */
  no_console: Code.FailedPrecondition,
  /** The server's agent does not run the server's process (start, stop, restart, kill need `outpost-agent wrap`). */
  no_lifecycle: Code.FailedPrecondition,
  /** The server's agent would not act on a lifecycle request (its operator is stopping it). */
  agent_refused: Code.FailedPrecondition,
  /**
   * What was asked reached the server's agent and no answer came (too slow, or the agent went
   * away first): it may have been done. A console command's outcome is settled later
   * (servers/getConsoleCommand).
   */
  outcome_unknown: Code.DeadlineExceeded,
  /** A path in a server's directory that no file system should read (a control character, a backslash, an empty segment). */
  invalid_path: Code.InvalidArgument,
  /** A path that leads out of the server's directory (`..`, absolute, a symlink out): refused, never followed. */
  outside_root: Code.InvalidArgument,
  /** The agent's operator serves no files (`wrap --files off`, or an agent older than files). */
  files_off: Code.FailedPrecondition,
  /** The agent's operator allows reading only (`wrap --files read-only`). */
  read_only: Code.PermissionDenied,
  /** The path is on the agent operator's deny list (`wrap --files-deny`): writes are refused; reads see nothing there. */
  denied: Code.PermissionDenied,
  /** The operation needs a file, and the path is a directory, a device or the like. */
  not_a_regular_file: Code.FailedPrecondition,
  /** The operation needs a directory, and the path is a file. */
  not_a_directory: Code.FailedPrecondition,
  /** Something is already at the path (create a directory, move without overwrite). */
  already_exists: Code.AlreadyExists,
  /** Deleting a directory that is not empty, without `recursive`. */
  directory_not_empty: Code.FailedPrecondition,
  /** The file changed since the caller read it (writeFile's expected_sha256): nothing was written. */
  edit_conflict: Code.Aborted,
  /** The file is larger than readFile answers (5 MiB); the edge answers 413. Download it instead. */
  too_large: Code.FailedPrecondition,
  rate_limited: Code.ResourceExhausted,
  /** Too much work of one kind is under way (password hashing); retry shortly. */
  server_busy: Code.ResourceExhausted,
  /** The database cannot be reached right now (core/db/unavailable.ts); retry shortly. */
  database_unavailable: Code.Unavailable,
  /** The assistant's model endpoint refused, failed or did not answer in time (core/chat/model.ts). */
  model_unavailable: Code.Unavailable,
  /** The Idempotency-Key was already used by this caller for a different procedure or request (HTTP 422). */
  idempotency_key_reused: Code.InvalidArgument,
  /** The first request with this Idempotency-Key is still running (HTTP 409); a retry in a moment gets its answer. */
  idempotency_key_in_flight: Code.Aborted,
  /** The caller went away before the answer was done. */
  cancelled: Code.Canceled,
} as const;

export type DomainErrorReason = keyof typeof domainErrors;

/** A proto message that travels beside ErrorInfo in the error's details (e.g. RetryInfo). */
export interface DomainErrorDetail {
  desc: DescMessage;
  value: MessageInitShape<DescMessage>;
}

/** A failure the caller can act on; its message is safe to show. */
export class DomainError extends Error {
  readonly reason: DomainErrorReason;
  readonly details: readonly DomainErrorDetail[];

  constructor(reason: DomainErrorReason, message: string, details: readonly DomainErrorDetail[] = []) {
    super(message);
    this.name = "DomainError";
    this.reason = reason;
    this.details = details;
  }

  toConnectError(): ConnectError {
    return new ConnectError(this.message, domainErrors[this.reason], undefined, [
      { desc: ErrorInfoSchema, value: create(ErrorInfoSchema, { reason: this.reason }) },
      ...this.details,
    ]);
  }
}

/** Shorthand: `throw fail("not_found", "server not found")`. */
export function fail(reason: DomainErrorReason, message: string): DomainError {
  return new DomainError(reason, message);
}

/** One problem with one field of a request: the field's proto name, a list element's index, and what is wrong. */
export interface FieldProblem {
  field: string;
  index?: number;
  message: string;
}

const jsonFieldName = (protoName: string) => protoName.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());

/**
 * `reason` (invalid_argument unless said) about fields of the request. The message names each
 * problem, "field: message" or "field[i]: message" joined by "; ", for people; a buf.validate
 * Violations detail, like the validate interceptor's, names the same fields for callers, so none
 * has to parse the message to put an answer next to its field.
 */
export function fieldFail(problems: readonly FieldProblem[], reason: DomainErrorReason = "invalid_argument"): DomainError {
  const text = problems.map((p) => `${jsonFieldName(p.field)}${p.index === undefined ? "" : `[${p.index}]`}: ${p.message}`).join("; ");
  const violations = create(ViolationsSchema, {
    violations: problems.map((p) => ({
      field: { elements: [{ fieldName: p.field, subscript: p.index === undefined ? undefined : { case: "index" as const, value: BigInt(p.index) } }] },
      message: p.message,
      ruleId: reason,
    })),
  });
  return new DomainError(reason, text, [{ desc: ViolationsSchema, value: violations }]);
}
