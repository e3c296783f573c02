/**
 * The hosted page's browser check: an ALTCHA proof of work (altcha-lib's v1 scheme: find n ≤
 * maxnumber with SHA-256(salt + n) = challenge), signed with an HMAC key and bound to one hosted
 * session. `outpost serve` derives the key from KEY_ENCRYPTION_KEY, so every instance verifies
 * every other's challenges. Nothing leaves the machine; no third party is asked.
 */
import { randomBytes } from "node:crypto";
import { createChallenge, extractParams, verifySolution } from "altcha-lib/v1";
import type { Challenge } from "altcha-lib/v1/types";

export interface BotCheckOptions {
  /** The HMAC key; a random one per process otherwise (a challenge is then verified by the instance that made it). */
  hmacKey?: string;
  /** The search space; a browser hashes about 50–100k values a second with WebCrypto. */
  maxNumber?: number;
  /** How long a challenge may be solved, in ms. */
  ttlMs?: number;
}

export interface BotCheck {
  /** A challenge for the page of `sessionId`. */
  create(sessionId: string): Promise<Challenge>;
  /** True when `payload` (the solver's base64 JSON, or the object) solves a live challenge made for `sessionId`. */
  verify(payload: unknown, sessionId: string): Promise<boolean>;
}

export function createBotCheck(options: BotCheckOptions = {}): BotCheck {
  const hmacKey = options.hmacKey ?? randomBytes(32).toString("base64url");
  const maxNumber = options.maxNumber ?? 50_000;
  const ttlMs = options.ttlMs ?? 10 * 60_000;
  return {
    create: (sessionId) => createChallenge({ hmacKey, maxNumber, expires: new Date(Date.now() + ttlMs), params: { session: sessionId } }),
    async verify(payload, sessionId) {
      let parsed: unknown = payload;
      if (typeof payload === "string") {
        try {
          parsed = JSON.parse(Buffer.from(payload, "base64").toString("utf8"));
        } catch {
          return false;
        }
      }
      if (!parsed || typeof parsed !== "object") return false;
      const p = parsed as Record<string, unknown>;
      if (typeof p.salt !== "string" || typeof p.challenge !== "string" || typeof p.signature !== "string" || !Number.isSafeInteger(p.number)) return false;
      if (p.algorithm !== "SHA-256") return false;
      const candidate = { algorithm: "SHA-256" as const, challenge: p.challenge, salt: p.salt, signature: p.signature, number: p.number as number };
      if (extractParams(candidate).session !== sessionId) return false;
      try {
        return await verifySolution(candidate, hmacKey, true);
      } catch {
        return false;
      }
    },
  };
}
