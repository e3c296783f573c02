/**
 * OAuth redirect URIs, for both issuers: what may be registered, its one normalized form, and the
 * exact match an authorization or token request must make against the registered list.
 *
 * Normalizing touches only what cannot change where a browser lands: the scheme and host are
 * lower-cased (the host in WHATWG's canonical form), a default port (:443 for https, :80 for
 * http) is dropped and an empty path becomes "/". Path and query stay exactly as written — no
 * decoding, re-encoding or dot-segment removal, and a trailing slash is kept — so what an app
 * registers is what it must send.
 */

export interface RedirectUriRules {
  /** Allow http on any host (local development); otherwise http only on loopback hosts. */
  allowInsecure: boolean;
}

export type NormalizedRedirectUri = { ok: true; uri: string } | { ok: false; reason: string };

export const maxRedirectUriLength = 2048;

/** Hosts where http is allowed: the app runs on the user's own machine. */
const loopbackHosts = new Set(["localhost", "127.0.0.1", "[::1]"]);

/** Characters RFC 3986 allows in a URI (with "%" checked separately as a percent-encoding). */
const uriCharacters = /^[A-Za-z0-9\-._~:/?#[\]@!$&'()*+,;=%]*$/;
const badPercent = /%(?![0-9A-Fa-f]{2})/;
/** scheme "://" authority path [ "?" query ] [ "#" fragment ] (RFC 3986, appendix B). */
const uriParts = /^([A-Za-z][A-Za-z0-9+.-]*):(?:\/\/([^/?#]*))?([^?#]*)(\?[^#]*)?(#.*)?$/;
/** A registered name (letters, digits, dots, hyphens) or a bracketed IPv6 address, then a port. */
const authorityParts = /^([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::(\d*))?$/;

/** The structure alone: a well-formed absolute http(s) URL, normalized. No policy on the scheme. */
function parse(raw: string): NormalizedRedirectUri {
  const refuse = (reason: string): NormalizedRedirectUri => ({ ok: false, reason });
  if (raw.length > maxRedirectUriLength) return refuse(`must be at most ${maxRedirectUriLength} characters`);
  if (!uriCharacters.test(raw)) return refuse("contains a character a URL does not allow (a space, a quote, a non-ASCII letter…)");
  if (badPercent.test(raw)) return refuse("has a % that is not followed by two hex digits");
  const parts = uriParts.exec(raw);
  if (!parts) return refuse("must be an absolute URL like https://app.example.com/callback");
  const [, rawScheme, authority, path, query = "", fragment] = parts;
  const scheme = rawScheme.toLowerCase();
  if (scheme !== "https" && scheme !== "http") return refuse(`must use https (custom schemes like ${scheme}: are not supported)`);
  if (authority === undefined || authority === "") return refuse("must have a host");
  if (fragment !== undefined) return refuse("must not contain a fragment (#…)");
  if (authority.includes("@")) return refuse("must not contain a user name or password");
  const hostPort = authorityParts.exec(authority);
  if (!hostPort || hostPort[2] === "") return refuse("has an invalid host or port");
  let origin: URL;
  try {
    // WHATWG's host parser: lower-cases, canonicalizes IP addresses, drops the scheme's default port.
    origin = new URL(`${scheme}://${authority}/`);
  } catch {
    return refuse("has an invalid host or port");
  }
  const port = origin.port ? `:${origin.port}` : "";
  return { ok: true, uri: `${scheme}://${origin.hostname}${port}${path || "/"}${query}` };
}

function isLoopback(uri: string): boolean {
  return loopbackHosts.has(new URL(uri).hostname);
}

/**
 * The normalized form of a redirect URI to register, or why it cannot be registered: it must be
 * an absolute http(s) URL without fragment or userinfo, and use https unless its host is
 * localhost, 127.0.0.1 or [::1] (or `rules.allowInsecure`).
 */
export function normalizeRedirectUri(raw: string, rules: RedirectUriRules): NormalizedRedirectUri {
  const parsed = parse(raw);
  if (!parsed.ok) return parsed;
  if (parsed.uri.startsWith("http:") && !rules.allowInsecure && !isLoopback(parsed.uri)) {
    return { ok: false, reason: "must use https (or a loopback host)" };
  }
  return parsed;
}

/**
 * Whether a requested redirect_uri is one of the registered (already normalized) ones: equal
 * after normalizing the request, nothing looser. The https rule is applied when registering, not
 * here.
 */
export function redirectUriMatches(saved: readonly string[], requested: string): boolean {
  const parsed = parse(requested);
  return parsed.ok && saved.includes(parsed.uri);
}
