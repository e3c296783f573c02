/**
 * The one way Outpost sends HTTP to an address someone else chose (webhooks, Discord, web push).
 * Each send: checks the URL (https; http and loopback only for local development), resolves the
 * host (c-ares, A and AAAA, bounded in time: see dns.ts) and checks EVERY address it resolves to (no private, loopback, link-local, CGNAT,
 * unique-local, multicast or metadata address), then connects to the checked address itself —
 * pinned, so a second DNS answer cannot switch it (rebinding) — with the Host header and the TLS
 * server name (SNI and certificate check) still the URL's host. Redirects are not followed (a 3xx
 * is a failed delivery that says where it pointed), the response body is read up to a cap and the
 * whole send, DNS included, is bounded in time. It never throws: every end is an {@link OutboundOutcome}.
 */
import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { isIP } from "node:net";
import { addressRefusal } from "./address-policy.ts";
import { createDnsResolver, DnsFailure, type Resolver } from "./dns.ts";
import { checkTargetUrl } from "./target-url.ts";

export interface OutboundRequest {
  url: string;
  /** POST unless said. */
  method?: "POST" | "PUT";
  headers?: Record<string, string>;
  body: string | Uint8Array;
}

/** Why a send failed, for a program: refused (URL or address), dns, timeout, connection (incl. TLS), redirect, http_status (not 2xx). */
export type OutboundFailure = "refused" | "dns" | "timeout" | "connection" | "redirect" | "http_status";

export interface OutboundOutcome {
  /** The target answered 2xx. */
  ok: boolean;
  /** The HTTP status, 0 when no answer came. */
  status: number;
  failure?: OutboundFailure;
  /** For a person: why it failed; "" when ok. */
  error: string;
  /** The answer's body as text, at most `maxResponseBytes` of it. */
  responseBody: string;
  /** The body was longer than the cap (the rest was not read). */
  truncated: boolean;
  /** The answer's headers, lower-case names (repeated ones joined by ", "). */
  responseHeaders: Record<string, string>;
  /** The address connected to, when it came that far. */
  address?: string;
  durationMs: number;
}

export type { Resolver } from "./dns.ts";

export interface OutboundOptions {
  /** Local development: http and loopback targets are allowed (ALLOW_LOCAL_OUTBOUND). */
  allowLocal: boolean;
  /** c-ares on the system's name servers, bounded in time ({@link createDnsResolver}), otherwise. */
  resolve?: Resolver;
  /** The whole send's bound, DNS included; 10 s otherwise. */
  timeoutMs?: number;
  /** How much of an answer's body is read; 64 KiB otherwise. */
  maxResponseBytes?: number;
  /** Extra trusted CA certificates (tests with their own TLS receiver); the system's otherwise. */
  ca?: string | Buffer;
}

export interface OutboundSender {
  /** Local development: http and loopback targets are allowed. */
  readonly allowLocal: boolean;
  send(request: OutboundRequest): Promise<OutboundOutcome>;
  /** The URL checks of a send, without the network: undefined when fine, else the problem ("must use https"). */
  urlProblem(url: string): string | undefined;
}

class SendFailure extends Error {
  readonly failure: OutboundFailure;
  readonly status: number;
  constructor(failure: OutboundFailure, message: string, status = 0) {
    super(message);
    this.failure = failure;
    this.status = status;
  }
}

/** The host's addresses, each checked; the first is the one to connect to. */
async function resolveChecked(host: string, options: OutboundOptions, resolve: Resolver): Promise<string> {
  if (isIP(host)) {
    const refusal = addressRefusal(host, options.allowLocal);
    if (refusal) throw new SendFailure("refused", refusal);
    return host;
  }
  let addresses: ReadonlyArray<{ address: string }>;
  try {
    addresses = await resolve(host);
  } catch (error) {
    if (error instanceof DnsFailure) throw new SendFailure("dns", error.message);
    throw new SendFailure("dns", `${host} could not be resolved (${(error as NodeJS.ErrnoException).code ?? "no answer"})`);
  }
  if (!addresses.length) throw new SendFailure("dns", `${host} resolves to no address`);
  for (const { address } of addresses) {
    const refusal = addressRefusal(address, options.allowLocal);
    if (refusal) throw new SendFailure("refused", `${host} resolves to ${refusal}`);
  }
  return addresses[0].address;
}

/** Reads at most `cap` bytes of the body; the rest is not read. */
async function readCapped(response: IncomingMessage, cap: number): Promise<{ text: string; truncated: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response as AsyncIterable<Buffer>) {
    chunks.push(chunk);
    size += chunk.length;
    if (size > cap) {
      response.destroy();
      return { text: Buffer.concat(chunks).subarray(0, cap).toString("utf8"), truncated: true };
    }
  }
  return { text: Buffer.concat(chunks).toString("utf8"), truncated: false };
}

function headersOf(response: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(response.headers)) if (value !== undefined) out[name] = Array.isArray(value) ? value.join(", ") : value;
  return out;
}

function connectionProblem(error: NodeJS.ErrnoException): string {
  const code = error.code ?? "";
  if (code === "ECONNREFUSED") return "the connection was refused";
  if (code === "ECONNRESET" || error.message === "socket hang up") return "the connection was closed before an answer came";
  if (code.startsWith("CERT_") || code.startsWith("ERR_TLS") || code.includes("SELF_SIGNED") || code.includes("UNABLE_TO"))
    return `the TLS certificate was not accepted (${code})`;
  return `the connection failed (${code || error.message})`;
}

type Exchange = { status: number; headers: Record<string, string>; body: { text: string; truncated: boolean } };

/** One request to the pinned address; resolves with the answer, rejects with a SendFailure. */
function exchange(url: URL, address: string, request: OutboundRequest, options: OutboundOptions, signal: AbortSignal): Promise<Exchange> {
  const body = typeof request.body === "string" ? Buffer.from(request.body) : request.body;
  const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  const send = url.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send({
      host: address,
      port: url.port || (url.protocol === "https:" ? 443 : 80),
      path: `${url.pathname}${url.search}`,
      method: request.method ?? "POST",
      headers: { "user-agent": "Outpost", ...request.headers, host: url.host, "content-length": String(body.byteLength) },
      servername: isIP(host) ? undefined : host,
      ca: options.ca,
      agent: false,
      signal,
    });
    req.once("error", (error: NodeJS.ErrnoException) =>
      reject(signal.aborted ? new SendFailure("timeout", "no answer in time") : new SendFailure("connection", connectionProblem(error))),
    );
    req.once("response", (response) => {
      const status = response.statusCode ?? 0;
      if (status >= 300 && status < 400) {
        response.destroy();
        const location = response.headers.location;
        return reject(new SendFailure("redirect", `answered ${status}, a redirect${location ? ` to ${location}` : ""}, which Outpost does not follow`, status));
      }
      readCapped(response, options.maxResponseBytes ?? 64 * 1024).then(
        (read) => resolve({ status, headers: headersOf(response), body: read }),
        () =>
          reject(
            signal.aborted
              ? new SendFailure("timeout", "the answer did not finish in time", status)
              : new SendFailure("connection", "the connection was closed during the answer", status),
          ),
      );
    });
    req.end(body);
  });
}

export function createOutboundSender(options: OutboundOptions): OutboundSender {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const resolve = options.resolve ?? createDnsResolver();
  const urlProblem = (raw: string) => {
    const checked = checkTargetUrl(raw, options);
    return checked.ok ? undefined : checked.problem;
  };
  async function attempt(request: OutboundRequest, signal: AbortSignal, pinned: { address?: string }): Promise<Exchange> {
    const checked = checkTargetUrl(request.url, options);
    if (!checked.ok) throw new SendFailure("refused", `the URL ${checked.problem}`);
    const timedOut = new Promise<never>((_, reject) => signal.addEventListener("abort", () => reject(new SendFailure("timeout", "no answer in time")), { once: true }));
    pinned.address = await Promise.race([resolveChecked(checked.host, options, resolve), timedOut]);
    return exchange(checked.url, pinned.address, request, options, signal);
  }
  return {
    allowLocal: options.allowLocal,
    urlProblem,
    async send(request) {
      const started = performance.now();
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), timeoutMs);
      const pinned: { address?: string } = {};
      const elapsed = () => Math.round(performance.now() - started);
      try {
        const answer = await attempt(request, controller.signal, pinned);
        const ok = answer.status >= 200 && answer.status < 300;
        return {
          ok,
          status: answer.status,
          ...(!ok && { failure: "http_status" as const }),
          error: ok ? "" : `answered ${answer.status}`,
          responseBody: answer.body.text,
          truncated: answer.body.truncated,
          responseHeaders: answer.headers,
          address: pinned.address,
          durationMs: elapsed(),
        };
      } catch (error) {
        const failure = error instanceof SendFailure ? error : new SendFailure("connection", `the send failed (${(error as Error).message})`);
        const message = failure.failure === "timeout" ? `${failure.message} (${timeoutMs / 1000} s)` : failure.message;
        return {
          ok: false,
          status: failure.status,
          failure: failure.failure,
          error: message,
          responseBody: "",
          truncated: false,
          responseHeaders: {},
          address: pinned.address,
          durationMs: elapsed(),
        };
      } finally {
        clearTimeout(timer);
      }
    },
  };
}
