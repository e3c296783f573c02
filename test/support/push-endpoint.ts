/**
 * A local Web Push endpoint for tests, standing in for a browser vendor's push service: it holds
 * a browser's subscription keys (ECDH P-256 and a 16-byte auth secret, as PushManager makes
 * them), checks each request's VAPID Authorization header (RFC 8292) with jose, and decrypts the
 * aes128gcm payload (RFC 8188 + RFC 8291) with node:crypto alone — written from the RFCs, not
 * with web-push, so the sender's encryption is checked by an independent reading. It answers with
 * the status a test sets.
 */
import assert from "node:assert/strict";
import { createDecipheriv, createECDH, hkdfSync, randomBytes, randomUUID, type ECDH } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { decodeJwt, importJWK, jwtVerify } from "jose";

/** What a browser's PushManager.subscribe makes: its keys, as PushSubscription.toJSON() gives them. */
export interface BrowserKeys {
  ecdh: ECDH;
  auth: Buffer;
  json: { p256dh: string; auth: string };
}

export function browserKeys(): BrowserKeys {
  const ecdh = createECDH("prime256v1");
  ecdh.generateKeys();
  const auth = randomBytes(16);
  return { ecdh, auth, json: { p256dh: ecdh.getPublicKey().toString("base64url"), auth: auth.toString("base64url") } };
}

/** RFC 8291 §3.4 and RFC 8188 §2: the payload of one aes128gcm body, decrypted with the browser's keys. */
export function decryptAes128gcm(body: Buffer, keys: BrowserKeys): Buffer {
  const salt = body.subarray(0, 16);
  const rs = body.readUInt32BE(16);
  const idlen = body[20];
  const asPublic = body.subarray(21, 21 + idlen);
  assert.equal(idlen, 65, "the key id is the application server's uncompressed ECDH public key");
  const record = body.subarray(21 + idlen);
  assert.ok(record.length <= rs, "a push message is one record");
  const uaPublic = keys.ecdh.getPublicKey();
  const ecdhSecret = keys.ecdh.computeSecret(asPublic);
  const keyInfo = Buffer.concat([Buffer.from("WebPush: info\0"), uaPublic, asPublic]);
  const ikm = Buffer.from(hkdfSync("sha256", ecdhSecret, keys.auth, keyInfo, 32));
  const cek = Buffer.from(hkdfSync("sha256", ikm, salt, Buffer.from("Content-Encoding: aes128gcm\0"), 16));
  const nonce = Buffer.from(hkdfSync("sha256", ikm, salt, Buffer.from("Content-Encoding: nonce\0"), 12));
  const decipher = createDecipheriv("aes-128-gcm", cek, nonce);
  decipher.setAuthTag(record.subarray(record.length - 16));
  const padded = Buffer.concat([decipher.update(record.subarray(0, record.length - 16)), decipher.final()]);
  // The last record ends with the delimiter 0x02, then zero or more 0x00 of padding.
  let end = padded.length - 1;
  while (end >= 0 && padded[end] === 0) end--;
  assert.equal(padded[end], 2, "the last record's padding delimiter is 0x02");
  return padded.subarray(0, end);
}

export interface VapidClaims {
  aud: string;
  exp: number;
  sub: string;
  /** The `k` parameter: the sender's VAPID public key, base64url. */
  key: string;
}

/** RFC 8292: `vapid t=<ES256 JWT>, k=<public key>`, verified against k; aud is the endpoint's origin. */
export async function verifyVapid(authorization: string | undefined, origin: string, nowSeconds: number): Promise<VapidClaims> {
  const match = /^vapid t=([\w-]+\.[\w-]+\.[\w-]+), k=([\w-]+)$/.exec(authorization ?? "");
  assert.ok(match, `a VAPID Authorization header, not ${authorization}`);
  const [, token, key] = match;
  const point = Buffer.from(key, "base64url");
  assert.equal(point.length, 65);
  const jwk = { kty: "EC", crv: "P-256", x: point.subarray(1, 33).toString("base64url"), y: point.subarray(33).toString("base64url") };
  const { payload, protectedHeader } = await jwtVerify(token, await importJWK(jwk, "ES256"), { algorithms: ["ES256"], audience: origin });
  assert.equal(protectedHeader.alg, "ES256");
  const exp = decodeJwt(token).exp!;
  assert.ok(exp > nowSeconds && exp <= nowSeconds + 24 * 3600, `exp within 24 hours (${exp - nowSeconds} s)`);
  assert.equal(typeof payload.sub, "string");
  return { aud: payload.aud as string, exp, sub: payload.sub as string, key };
}

export interface ReceivedPush {
  path: string;
  headers: http.IncomingHttpHeaders;
  vapid: VapidClaims;
  /** The decrypted payload, parsed as JSON. */
  message: Record<string, unknown>;
}

export interface PushEndpoint {
  origin: string;
  /** A new subscription at this endpoint: its URL and the browser's keys. */
  subscription(): { endpoint: string; keys: BrowserKeys };
  received: ReceivedPush[];
  /** Problems found in a request (bad encryption, bad VAPID): a test asserts there are none. */
  problems: string[];
  /** The status answered for requests to this endpoint URL (201 otherwise). */
  answer(endpoint: string, status: number): void;
  close(): Promise<void>;
}

/** Listens on 127.0.0.1 (a port the kernel picks, while listening). */
export async function startPushEndpoint(): Promise<PushEndpoint> {
  const keysByPath = new Map<string, BrowserKeys>();
  const statusByPath = new Map<string, number>();
  const received: ReceivedPush[] = [];
  const problems: string[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", async () => {
      const path = req.url ?? "";
      try {
        const keys = keysByPath.get(path);
        assert.ok(keys, `no subscription at ${path}`);
        assert.equal(req.method, "POST");
        assert.equal(req.headers["content-encoding"], "aes128gcm");
        assert.ok(Number(req.headers.ttl) >= 0, "a TTL header");
        const vapid = await verifyVapid(req.headers.authorization, endpoint.origin, Math.floor(Date.now() / 1000));
        const message = JSON.parse(decryptAes128gcm(Buffer.concat(chunks), keys).toString("utf8")) as Record<string, unknown>;
        received.push({ path, headers: req.headers, vapid, message });
      } catch (error) {
        problems.push(`${path}: ${(error as Error).message}`);
        res.statusCode = 400;
        return res.end();
      }
      res.statusCode = statusByPath.get(path) ?? 201;
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const endpoint: PushEndpoint = {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    problems,
    subscription() {
      const path = `/push/${randomUUID()}`;
      const keys = browserKeys();
      keysByPath.set(path, keys);
      return { endpoint: `${endpoint.origin}${path}`, keys };
    },
    answer(url, status) {
      statusByPath.set(new URL(url).pathname, status);
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  return endpoint;
}
