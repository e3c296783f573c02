/**
 * Signatures (RSA above all, the costly kind) on threads of their own, one per core: the token endpoint signs on every exchange,
 * and on libuv's shared thread pool that work both competed with password hashing (argon2 runs
 * there too, so a burst of sign-ins held up every token) and, at four threads on two cores, took
 * the event loop's core away from it. Measured with `npm run bench:oauth` on this 2-core machine.
 *
 * Keys are sent to a thread once (by kid) and kept there; the pool mirrors what each thread holds.
 * Threads start on first use and keep the process alive only while they owe a signature. One pool
 * serves the process: the composition root builds it and closes it.
 */
import { availableParallelism } from "node:os";
import type { KeyObject } from "node:crypto";
import { Worker } from "node:worker_threads";
import type { SignJob, SignResult } from "./sign-worker.ts";

const keysKept = 8;

export interface SignerPool {
  /** The base64url JWS signature of `input` under `key`, by its kind (RS256, ES256 or EdDSA). */
  sign(kid: string, key: KeyObject, input: string): Promise<string>;
  /** Ends the threads; a later sign starts them again. */
  close(): Promise<void>;
}

interface Thread {
  worker: Worker;
  pending: Map<number, { resolve: (signature: string) => void; reject: (error: Error) => void }>;
  /** The kids this thread holds, oldest first, as it evicts them. */
  kids: string[];
}

export function createSignerPool(size = availableParallelism()): SignerPool {
  let threads: Thread[] = [];
  let nextId = 0;

  function start(): Thread {
    const worker = new Worker(new URL("./sign-worker.ts", import.meta.url), { name: "outpost-signer", workerData: { keysKept } });
    const thread: Thread = { worker, pending: new Map(), kids: [] };
    worker.on("message", (result: SignResult) => {
      const job = thread.pending.get(result.id);
      if (!job) return;
      thread.pending.delete(result.id);
      if (thread.pending.size === 0) worker.unref();
      if ("signature" in result) job.resolve(result.signature);
      else {
        thread.kids = []; // resend keys rather than trust the mirror again
        job.reject(new Error(`signing failed: ${result.error}`));
      }
    });
    const fail = (error: Error) => {
      threads = threads.filter((t) => t !== thread);
      for (const job of thread.pending.values()) job.reject(error);
      thread.pending.clear();
    };
    worker.on("error", fail);
    // An answer that cannot be read belongs to no known job: end the thread, failing what it owed.
    worker.on("messageerror", () => void worker.terminate());
    worker.on("exit", (code) => fail(new Error(`signing thread exited (${code})`)));
    worker.unref(); // after the listeners, which would otherwise hold the process up
    return thread;
  }

  function least(): Thread {
    while (threads.length < Math.max(1, size)) threads.push(start());
    let best = threads[0];
    for (const t of threads) if (t.pending.size < best.pending.size) best = t;
    return best;
  }

  return {
    sign(kid, key, input) {
      const thread = least();
      const id = nextId++;
      const sendKey = !thread.kids.includes(kid);
      const job: SignJob = { id, kid, input, ...(sendKey && { key }) };
      return new Promise<string>((resolve, reject) => {
        thread.worker.postMessage(job); // throws before anything below records the job
        if (sendKey) {
          thread.kids.push(kid);
          if (thread.kids.length > keysKept) thread.kids.shift();
        }
        // Referenced only while it owes an answer, so an awaited signature keeps the process up.
        if (thread.pending.size === 0) thread.worker.ref();
        thread.pending.set(id, { resolve, reject });
      });
    },
    async close() {
      const ending = threads;
      threads = [];
      await Promise.all(ending.map((t) => t.worker.terminate()));
    },
  };
}
