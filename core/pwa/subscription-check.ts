/**
 * What a push subscription must be beyond the contract's shape: an endpoint the outbound sender
 * may send to (https, no private address; http and loopback only with ALLOW_LOCAL_OUTBOUND), without credentials in it, and keys that are really
 * a P-256 point and a 16-byte secret — so that every later send can encrypt to it.
 */
import { ECDH } from "node:crypto";
import type { SubscribeRequest } from "../../gen/outpost/pwa/v1/pwa_service_pb.js";
import { fieldFail, type FieldProblem } from "../errors.ts";

export interface CheckedSubscription {
  endpoint: string;
  /** base64url without padding. */
  p256dh: string;
  auth: string;
  userAgent: string;
}

/** `outboundProblem`: the outbound sender's own URL rules (https, no private address; core/outbound). */
function endpointProblem(endpoint: string, outboundProblem: (url: string) => string | undefined): string | undefined {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    return "must be an absolute URL";
  }
  if (url.username || url.password) return "must not carry credentials";
  return outboundProblem(endpoint);
}

/** A point on P-256, uncompressed (65 bytes, starting 0x04). */
function isP256Point(bytes: Buffer): boolean {
  if (bytes.length !== 65 || bytes[0] !== 0x04) return false;
  try {
    ECDH.convertKey(bytes, "prime256v1", undefined, undefined, "compressed"); // throws off the curve
    return true;
  } catch {
    return false;
  }
}

/** The subscription as stored, or invalid_argument naming each bad field. */
export function checkSubscription(req: SubscribeRequest, outboundProblem: (url: string) => string | undefined): CheckedSubscription {
  const problems: FieldProblem[] = [];
  const endpointIssue = endpointProblem(req.endpoint, outboundProblem);
  if (endpointIssue) problems.push({ field: "endpoint", message: endpointIssue });
  const p256dh = Buffer.from(req.keys?.p256dh ?? "", "base64url");
  if (!isP256Point(p256dh)) problems.push({ field: "keys.p256dh", message: "must be an uncompressed P-256 public key (65 bytes, base64url)" });
  const auth = Buffer.from(req.keys?.auth ?? "", "base64url");
  if (auth.length !== 16) problems.push({ field: "keys.auth", message: "must be 16 bytes, base64url" });
  if (problems.length) throw fieldFail(problems);
  return { endpoint: req.endpoint, p256dh: p256dh.toString("base64url"), auth: auth.toString("base64url"), userAgent: req.userAgent ?? "" };
}
