/**
 * A signing thread of the signer pool (core/keys/signer-pool.ts): RSASSA-PKCS1-v1_5 with SHA-256
 * over the text it is sent, with a key it was sent once before (by kid). Holds a few keys only,
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

parentPort!.on("message", (job: SignJob) => {
  let result: SignResult;
  try {
    if (job.key) keys.set(job.kid, job.key);
    const key = keys.get(job.kid);
    if (!key) throw new Error(`no key ${job.kid} on this signing thread`);
    result = { id: job.id, signature: sign("sha256", Buffer.from(job.input), key).toString("base64url") };
  } catch (error) {
    result = { id: job.id, error: error instanceof Error ? error.message : String(error) };
  }
  parentPort!.postMessage(result);
});
