/**
 * One-time login codes of hosted sign-in sessions: 8 characters of an alphabet without look-alikes
 * (no 0/O, 1/I/L), shown "XXXX-XXXX", about 40 bits. About 40 bits is too few for a plain hash: a
 * database dump would give up every live code to a brute force of SHA-256 in minutes. So the
 * lookup value is an HMAC under a key derived from KEY_ENCRYPTION_KEY ({@link LoginCodeHasher}),
 * and a reader of the database alone cannot test guesses; one who also holds the KEK can, which
 * the KEK's own protection has to prevent. The page shows the code again from a copy sealed under
 * a key derived from the browser binding hash, which the database keeps only hashed.
 */
import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes, randomInt } from "node:crypto";
import { formatLoginCode } from "../../contract/login-command.ts";

export const loginCodeAlphabet = "ABCDEFGHJKMNPQRSTUVWXYZ23456789";
export const loginCodeLength = 8;

/** A new normalized code ("ABCD2345"). */
export function newLoginCode(): string {
  let code = "";
  for (let i = 0; i < loginCodeLength; i++) code += loginCodeAlphabet[randomInt(loginCodeAlphabet.length)];
  return code;
}

/** The stored lookup value of a normalized code: hex HMAC-SHA256 under a key only core holds. */
export interface LoginCodeHasher {
  hash(code: string): string;
}

/**
 * A hasher keyed by `secret()`, which is asked once, on first use (the composition root derives it
 * from the KEK, which it resolves only when needed). Every instance sharing the KEK finds the
 * others' codes.
 */
export function createLoginCodeHasher(secret: () => string): LoginCodeHasher {
  let key: Buffer | undefined;
  return {
    hash(code) {
      key ??= Buffer.from(secret(), "utf8");
      return createHmac("sha256", key).update(code, "utf8").digest("hex");
    },
  };
}

/** The purpose the login codes' HMAC key is derived for (core/keys/key-encryption.ts `derivedSecret`). */
export const loginCodeKeyPurpose = "login code lookup";

export { formatLoginCode };

/** What is stored of the browser binding hash: its own SHA-256. */
export function bindingCheck(bindingHash: string): string {
  return createHash("sha256").update(bindingHash, "utf8").digest("hex");
}

function sealKey(bindingHash: string): Buffer {
  return createHmac("sha256", Buffer.from(bindingHash, "hex")).update("outpost login code").digest();
}

/** The code encrypted (AES-256-GCM) for the bound browser: base64url of iv, tag and ciphertext. */
export function sealLoginCode(code: string, bindingHash: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", sealKey(bindingHash), iv);
  const body = Buffer.concat([cipher.update(code, "utf8"), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64url");
}

export function openLoginCode(sealed: string, bindingHash: string): string {
  const raw = Buffer.from(sealed, "base64url");
  const decipher = createDecipheriv("aes-256-gcm", sealKey(bindingHash), raw.subarray(0, 12));
  decipher.setAuthTag(raw.subarray(12, 28));
  return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString("utf8");
}
