/**
 * The in-process transport's conformance harness: a scenario run through Connect's
 * createRouterTransport and through core/transport.ts, which must observe the same.
 */
import assert from "node:assert/strict";
import { Code, ConnectError, createRouterTransport, type ConnectRouter, type Transport } from "@connectrpc/connect";
import { ErrorInfoSchema } from "../../gen/outpost/errors/v1/errors_pb.js";
import { createInProcessTransport, type InProcessTransportOptions } from "../../core/transport.ts";

export type Build = (routes: (router: ConnectRouter) => void, options: InProcessTransportOptions) => Transport;
export const transports: Array<[string, Build]> = [
  ["router transport", (routes, options) => createRouterTransport(routes, options)],
  ["in-process transport", (routes, options) => createInProcessTransport(routes, options)],
];

/** Why a difference fails CI: the transport re-implements Connect's on its protocol internals. */
const drifted =
  "core/transport.ts no longer behaves as Connect's createRouterTransport: it re-implements the router transport on " +
  "@connectrpc/connect/protocol-connect internals for speed, and a Connect upgrade changed what they do. Fix core/transport.ts " +
  "until these cases agree again, or build the core transport with createRouterTransport (server/runtime.ts) and measure " +
  "bench:api and bench:console.";

/** Runs `scenario` through both transports and asserts it observed the same on each. */
export async function same<T>(scenario: (build: Build) => Promise<T>): Promise<T> {
  const [router, direct] = [await scenario(transports[0][1]), await scenario(transports[1][1])];
  assert.deepEqual(direct, router, drifted);
  return direct;
}

export function describeError(error: unknown) {
  const e = error as ConnectError;
  assert.ok(e instanceof ConnectError, `not a ConnectError: ${String(error)}`);
  const metadata: Record<string, string> = {};
  e.metadata.forEach((value, key) => (metadata[key] = value));
  return {
    code: Code[e.code],
    message: e.message,
    rawMessage: e.rawMessage,
    isWireError: e.isWireError,
    metadata,
    details: e.details.map((d) => ("type" in d ? { type: d.type, value: Buffer.from(d.value).toString("hex") } : { type: d.desc.typeName })),
    reasons: e.findDetails(ErrorInfoSchema).map((i) => i.reason),
  };
}

export function headersOf(h: Headers) {
  const out: Record<string, string> = {};
  h.forEach((value, key) => {
    if (key !== "content-length") out[key] = value;
  });
  return out;
}
