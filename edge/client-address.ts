/**
 * The client's address, for per-IP rate limits and the activity log, on both listeners. Without
 * trusted proxies it is the connection's peer. When the peer is a trusted proxy (TRUSTED_PROXIES),
 * the proxy's header (TRUSTED_PROXY_HEADER: X-Forwarded-For or RFC 7239 Forwarded) is read from
 * the right, skipping trusted hops: the first address that is not a trusted proxy is the client.
 * Anything a proxy would not have written (a malformed entry, `unknown`, an obfuscated node) makes
 * the peer the client, so a forged header can never pick the address it is counted under. Each
 * header line is parsed on its own, and a Forwarded line with anything malformed (a quote left
 * open) is malformed as a whole: the client's line cannot swallow what a proxy appends. Only
 * the configured header is read: the other one passes through proxies unchecked.
 */
import { BlockList, isIP, isIPv4 } from "node:net";
import type { IncomingMessage } from "node:http";
import type { Http2ServerRequest } from "node:http2";
import type { Middleware } from "koa";

/** The headers a trusted proxy may name the client in. */
export const proxyHeaders = ["x-forwarded-for", "forwarded"] as const;
export type ProxyHeader = (typeof proxyHeaders)[number];

export interface TrustedProxies {
  /** Addresses and CIDR ranges, IPv4 and IPv6, as configured. */
  entries: readonly string[];
  header: ProxyHeader;
}

/** No proxy is trusted: every request's client is its connection's peer. */
export const noProxies: TrustedProxies = Object.freeze({ entries: [], header: "x-forwarded-for" });

/** Why `entry` is not an address or a CIDR range, or undefined when it is one. */
export function proxyEntryProblem(entry: string): string | undefined {
  const [address, prefix, extra] = entry.split("/");
  const family = isIP(address);
  if (!family || extra !== undefined) return "not an IP address or a CIDR range like 10.0.0.0/8 or fd00::/8";
  if (prefix === undefined) return undefined;
  const max = family === 4 ? 32 : 128;
  if (!/^\d{1,3}$/.test(prefix) || Number(prefix) > max) return `the prefix length must be from 0 to ${max}`;
  return undefined;
}

/** A matcher for the configured proxies (IPv4-mapped IPv6 peers match their IPv4 entries). */
function trustedList(entries: readonly string[]): BlockList {
  const list = new BlockList();
  for (const entry of entries) {
    const [address, prefix] = entry.split("/");
    const type = isIPv4(address) ? "ipv4" : "ipv6";
    if (prefix === undefined) list.addAddress(address, type);
    else list.addSubnet(address, Number(prefix), type);
  }
  return list;
}

/** The address in a hop (`1.2.3.4`, `1.2.3.4:80`, `[2001:db8::1]:80`, `2001:db8::1`), or undefined. */
function hopAddress(value: string): string | undefined {
  const hop = value.trim();
  if (isIP(hop)) return hop;
  const bracketed = /^\[([^\]]+)\](?::\d{1,5})?$/.exec(hop);
  if (bracketed && isIP(bracketed[1]) === 6) return bracketed[1];
  const withPort = /^([\d.]+):\d{1,5}$/.exec(hop);
  if (withPort && isIPv4(withPort[1])) return withPort[1];
  return undefined;
}

const token = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** An unquoted value: a token, or (as some proxies write them) an address with `:` and brackets. */
const bareValue = /^[!#$%&'*+\-.^_`|~0-9A-Za-z:[\]]+$/;

/**
 * The `for=` of each element of one Forwarded header line (RFC 7239 §4), left to right; undefined
 * when anything in the line is malformed: an unterminated quoted string, a parameter that is not
 * `token=token` or `token="quoted"`, an element without `for=`.
 */
function forwardedFor(line: string): string[] | undefined {
  const elements: string[] = [];
  let pairs: Map<string, string> = new Map();
  let i = 0;
  const skipSpace = () => {
    while (line[i] === " " || line[i] === "\t") i++;
  };
  for (;;) {
    skipSpace();
    const eq = line.indexOf("=", i);
    if (eq < 0) return undefined;
    const name = line.slice(i, eq).trim().toLowerCase();
    if (!token.test(name) || pairs.has(name)) return undefined;
    i = eq + 1;
    let value = "";
    if (line[i] === '"') {
      // A quoted string ends at the next unescaped quote; none means the line is not the proxy's.
      for (i++; ; i++) {
        if (i >= line.length) return undefined;
        if (line[i] === "\\") value += line[++i] ?? "";
        else if (line[i] === '"') break;
        else value += line[i];
      }
      i++;
    } else {
      const stop = /[;,]|$/.exec(line.slice(i))!.index;
      value = line.slice(i, i + stop).trim();
      if (!bareValue.test(value)) return undefined;
      i += stop;
    }
    pairs.set(name, value);
    skipSpace();
    if (line[i] === ";") {
      i++;
      continue;
    }
    if (i < line.length && line[i] !== ",") return undefined;
    const forValue = pairs.get("for");
    if (forValue === undefined) return undefined;
    elements.push(forValue);
    if (i >= line.length) return elements;
    i++;
    pairs = new Map();
  }
}

/**
 * The hops the header names, left to right, each header line parsed on its own (Node would join
 * repeated lines with ", ", letting a quote the client left open swallow what the proxy added);
 * undefined entries are malformed. Undefined when the header is absent.
 */
function hops(req: IncomingMessage | Http2ServerRequest, header: ProxyHeader): Array<string | undefined> | undefined {
  const lines: string[] = [];
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    if (req.rawHeaders[i].toLowerCase() === header) lines.push(req.rawHeaders[i + 1]);
  }
  if (lines.length === 0 || lines.every((line) => line.trim() === "")) return undefined;
  if (header === "x-forwarded-for") return lines.flatMap((line) => line.split(","));
  return lines.flatMap((line) => forwardedFor(line) ?? [undefined]);
}

/** Builds the function that names a request's client; one per listener, both configured alike. */
export function createClientAddress(proxies: TrustedProxies): (req: IncomingMessage | Http2ServerRequest) => string {
  const list = proxies.entries.length ? trustedList(proxies.entries) : undefined;
  const trusted = (address: string) => list !== undefined && list.check(address, isIPv4(address) ? "ipv4" : "ipv6");
  return (req) => {
    const peer = req.socket.remoteAddress ?? "";
    if (!isIP(peer) || !trusted(peer)) return peer;
    const named = hops(req, proxies.header);
    if (!named) return peer;
    let client = peer;
    for (let i = named.length - 1; i >= 0; i--) {
      const address = named[i] === undefined ? undefined : hopAddress(named[i]!);
      if (address === undefined) return peer;
      client = address;
      if (!trusted(address)) return address;
    }
    // Every hop is a trusted proxy: the first of them made the request.
    return client;
  };
}

/** Sets `ctx.ip`, which everything after it reads, to the client's address. */
export function clientAddressMiddleware(proxies: TrustedProxies): Middleware {
  const clientAddress = createClientAddress(proxies);
  return async (ctx, next) => {
    ctx.request.ip = clientAddress(ctx.req);
    await next();
  };
}
