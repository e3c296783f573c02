/**
 * A delivery target's URL, checked without the network: absolute, https (http only for local
 * development), no user or password in it, and a host that is not written as a refused address
 * (an IP literal in a private range, `localhost`). Run when a target is saved and again before
 * each send, where the sender also checks the addresses the host resolves to.
 */
import { isIP } from "node:net";
import { addressRefusal } from "./address-policy.ts";

export interface TargetPolicy {
  /** Local development: http, and loopback addresses (127.0.0.0/8, ::1, localhost), are allowed. */
  allowLocal: boolean;
}

export type TargetCheck = { ok: true; url: URL; host: string } | { ok: false; problem: string };

/** The host without IPv6 brackets. */
export function bareHost(url: URL): string {
  return url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
}

/** RFC 6761: `localhost` and `*.localhost` name loopback. */
export function isLocalhostName(host: string): boolean {
  const lower = host.toLowerCase().replace(/\.$/, "");
  return lower === "localhost" || lower.endsWith(".localhost");
}

/** The URL's problem for a person to read, or the parsed URL. */
export function checkTargetUrl(raw: string, policy: TargetPolicy): TargetCheck {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, problem: "must be an absolute URL, like https://example.com/hooks/outpost" };
  }
  if (url.protocol !== "https:" && !(url.protocol === "http:" && policy.allowLocal)) {
    return { ok: false, problem: policy.allowLocal ? "must use https or http" : "must use https" };
  }
  if (url.username || url.password) return { ok: false, problem: "must not contain a user name or password" };
  const host = bareHost(url);
  if (!host) return { ok: false, problem: "must name a host" };
  if (isIP(host)) {
    const refusal = addressRefusal(host, policy.allowLocal);
    if (refusal) return { ok: false, problem: `must not point inside a private network: ${refusal}` };
  } else if (isLocalhostName(host) && !policy.allowLocal) {
    return { ok: false, problem: "must not point at localhost" };
  } else if (!host.includes(".") && !isLocalhostName(host)) {
    // A single-label name resolves through the deployment's search domains, to its own network.
    return { ok: false, problem: "must use a fully qualified host name" };
  }
  return { ok: true, url, host };
}
