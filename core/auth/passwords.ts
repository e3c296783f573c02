/**
 * Password hashing and checking (Argon2id), with a cap on how many run at once in the process.
 * Each costs 19 MiB and tens of milliseconds of a libuv thread, so a flood of sign-ups or sign-ins
 * would otherwise queue without bound, in memory and in front of every other use of that pool. Past
 * the cap a call waits in a bounded queue; when the queue is full it is refused at once
 * (`server_busy`, resource_exhausted with a RetryInfo detail: 429 and Retry-After at the edge).
 */
import { randomUUID } from "node:crypto";
import { hash, verify } from "@node-rs/argon2";
import { create } from "@bufbuild/protobuf";
import { RetryInfoSchema } from "../../gen/outpost/errors/v1/errors_pb.js";
import { DomainError } from "../errors.ts";

/** Argon2id (the package exports its algorithm ids as a const enum, which type stripping cannot read). */
const argon2id = 2;

/** Argon2id with OWASP's recommended minimum (19 MiB, 2 passes, 1 lane). */
const options = { algorithm: argon2id, memoryCost: 19456, timeCost: 2, parallelism: 1 } as const;

export interface PasswordHashingLimits {
  /** Hashes and checks running at once. */
  concurrency: number;
  /** Calls waiting for one of those places; one more is refused. */
  queue: number;
}

export interface Passwords {
  hash(password: string): Promise<string>;
  /** False for a wrong password; an absent hash (no such account) costs the same time. */
  verify(passwordHash: string | undefined, password: string): Promise<boolean>;
  /** Calls running and waiting now. */
  load(): { running: number; waiting: number };
}

/** Seconds a refused caller is told to wait: the queue drains in well under that. */
const retryAfterSeconds = 1;

function busy(limits: PasswordHashingLimits): DomainError {
  return new DomainError("server_busy", "too many passwords are being checked right now; try again in a second", [
    {
      desc: RetryInfoSchema,
      value: create(RetryInfoSchema, {
        retryAfterSeconds,
        limit: limits.concurrency + limits.queue,
        windowSeconds: retryAfterSeconds,
        policy: "password_hashing",
      }),
    },
  ]);
}

/** One per process (the composition root's), so the cap holds across every service that hashes. */
export function createPasswords(limits: PasswordHashingLimits): Passwords {
  let running = 0;
  const waiting: Array<() => void> = [];

  async function limited<T>(work: () => Promise<T>): Promise<T> {
    if (running < limits.concurrency) running++;
    else if (waiting.length < limits.queue) await new Promise<void>((resolve) => waiting.push(resolve));
    else throw busy(limits);
    try {
      return await work();
    } finally {
      // The place passes straight to the next waiter, so `running` stays as it is.
      const next = waiting.shift();
      if (next) next();
      else running--;
    }
  }

  /**
   * A real hash of a random password, checked when the account does not exist so that a wrong
   * email costs the same time as a wrong password. Made once, at start, outside the cap.
   */
  const decoy = hash(randomUUID(), options);

  return {
    hash: (password) => limited(() => hash(password, options)),
    async verify(passwordHash, password) {
      const against = passwordHash ?? (await decoy);
      return limited(async () => {
        try {
          return await verify(against, password);
        } catch {
          return false;
        }
      });
    },
    load: () => ({ running, waiting: waiting.length }),
  };
}
