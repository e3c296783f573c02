/**
 * How both issuers' token, userinfo, revocation and introspection calls fail: one way, thrown. A
 * refusal is a {@link DomainError} like any other in core (so the error interceptor makes it a
 * Connect error), its code the Connect code that fits, and the RFC 6749 / 6750 error with its
 * description rides beside ErrorInfo as an `OAuthError` detail (outpost.oauth.v1). The edge reads
 * that detail in its one translator (edge/oauth/oauth-errors.ts) and writes the OAuth answer: no
 * response message carries an error, and nothing between core and the HTTP answer converts it.
 */
import { create } from "@bufbuild/protobuf";
import { ConnectError } from "@connectrpc/connect";
import { OAuthErrorSchema } from "../../gen/outpost/oauth/v1/oauth_pb.js";
import { DomainError, type DomainErrorReason } from "../errors.ts";

/** The OAuth errors core answers, each with the domain reason (and so the Connect code) that fits it. */
const reasons = {
  invalid_client: "unauthenticated",
  invalid_token: "unauthenticated",
  invalid_grant: "invalid_argument",
  invalid_request: "invalid_argument",
  invalid_scope: "invalid_argument",
  unsupported_grant_type: "invalid_argument",
  unauthorized_client: "permission_denied",
} as const satisfies Record<string, DomainErrorReason>;

export type OAuthErrorCode = keyof typeof reasons;

/** An OAuth refusal: its error code and the description the client is told. */
export interface OAuthFailure {
  error: OAuthErrorCode;
  description: string;
}

/** The refusal to throw: `throw oauthFail("invalid_grant", "the code has expired")`. */
export function oauthFail(error: OAuthErrorCode, description: string): DomainError {
  return new DomainError(reasons[error], description, [{ desc: OAuthErrorSchema, value: create(OAuthErrorSchema, { error, description }) }]);
}

/** The OAuth refusal `error` carries (thrown by {@link oauthFail}, or after the error interceptor), or undefined. */
export function oauthFailureOf(error: unknown): OAuthFailure | undefined {
  const detail =
    error instanceof DomainError
      ? (error.details.find((d) => d.desc === OAuthErrorSchema)?.value as { error: string; description: string } | undefined)
      : error instanceof ConnectError
        ? error.findDetails(OAuthErrorSchema)[0]
        : undefined;
  return detail && detail.error in reasons ? { error: detail.error as OAuthErrorCode, description: detail.description } : undefined;
}
