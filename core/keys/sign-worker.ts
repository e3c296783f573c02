/**
 * A signing thread of the signer pool (core/keys/signer-pool.ts): the JWS signature of the text it
 * is sent, by the key's kind — RS256 (RSASSA-PKCS1-v1_5, SHA-256), ES256 (ECDSA P-256, SHA-256,
 * the raw r‖s form JWS uses) or EdDSA (Ed25519) — with a key it was sent once before (by kid). Holds a few keys only,
 * evicting the one sent longest ago: the pool sends an evicted one again.
 */
import { sign, type KeyObject } from "node:crypto";
import { parentPort, workerData } from "node:worker_threads";
import { BoundedMap } from "../bounded-map.ts";

export interface SignJob {
  id: number;
  kid: string;
  /** Present the first time this thread sees the kid. */
  key?: KeyObject;
  input: string;
}

export type SignResult = { id: number; signature: string } | { id: number; error: string };

/** How many keys the thread holds (the pool's mirror evicts alike). */
const keysKept: number = (workerData as { keysKept: number }).keysKept;

const keys = new BoundedMap<string, KeyObject>(keysKept);

/** The JWS signature of `input` under `key`, base64url (RFC 7518 §3.3, §3.4; RFC 8037 §3.1). */
function jwsSignature(input: string, key: KeyObject): string {
  const data = Buffer.from(input);
  switch (key.asymmetricKeyType) {
    case "rsa":
      return sign("sha256", data, key).toString("base64url");
    case "ec":
      return sign("sha256", data, { key, dsaEncoding: "ieee-p1363" }).toString("base64url");
    case "ed25519":
      return sign(null, data, key).toString("base64url");
    default:
      throw new Error(`no JWS algorithm for a ${key.asymmetricKeyType} key`);
  }
}

parentPort!.on("message", (job: SignJob) => {
  let result: SignResult;
  try {
    if (job.key) keys.set(job.kid, job.key);
    const key = keys.get(job.kid);
    if (!key) throw new Error(`no key ${job.kid} on this signing thread`);
    result = { id: job.id, signature: jwsSignature(job.input, key) };
  } catch (error) {
    result = { id: job.id, error: error instanceof Error ? error.message : String(error) };
  }
  parentPort!.postMessage(result);
});
