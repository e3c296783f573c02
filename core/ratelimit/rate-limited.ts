import { create } from "@bufbuild/protobuf";
import { RetryInfoSchema } from "../../gen/outpost/errors/v1/errors_pb.js";
import { DomainError } from "../errors.ts";
import type { Limiter } from "./limiter.ts";
import type { RateLimitPolicy } from "./policies.ts";

/**
 * A `rate_limited` error (resource_exhausted) whose RetryInfo detail says when to try again and
 * which policy refused, so the edge can answer 429 with Retry-After and RateLimit headers.
 */
export function rateLimited(policy: RateLimitPolicy, retryAfterSeconds: number, message: string): DomainError {
  return new DomainError("rate_limited", message, [
    {
      desc: RetryInfoSchema,
      value: create(RetryInfoSchema, {
        retryAfterSeconds: Math.max(1, Math.ceil(retryAfterSeconds)),
        limit: policy.limit,
        windowSeconds: policy.windowSeconds,
        policy: policy.name,
      }),
    },
  ]);
}

/** A wait in whole minutes, at least one: "1 minute", "12 minutes". */
export function inMinutes(seconds: number): string {
  const minutes = Math.max(1, Math.ceil(seconds / 60));
  return `${minutes} minute${minutes === 1 ? "" : "s"}`;
}

/** The refusal of an address over `bad_credential_ip` (credentials that match nothing). */
export function badCredentialRefusal(limiter: Limiter, retryAfterSeconds: number): DomainError {
  const s = Math.max(1, Math.ceil(retryAfterSeconds));
  return rateLimited(limiter.policy, s, `too many unknown credentials from your address; try again in ${s} second${s === 1 ? "" : "s"}`);
}
