/**
 * One-time login codes of hosted sign-in sessions: 8 characters of an alphabet without look-alikes
 * (no 0/O, 1/I/L), shown "XXXX-XXXX", about 40 bits. Stored as SHA-256 for the lookup; the page
 * shows it again from a copy sealed under a key derived from the browser binding hash, which the
 * database keeps only hashed, so a reader of the database can find neither.
 */
import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes, randomInt } from "node:crypto";
import { formatLoginCode } from "../agents/login-command.ts";
import { hashSecret } from "../../contract/secrets.ts";

export const loginCodeAlphabet = "ABCDEFGHJKMNPQRSTUVWXYZ23456789";
export const loginCodeLength = 8;

/** A new normalized code ("ABCD2345"). */
export function newLoginCode(): string {
  let code = "";
  for (let i = 0; i < loginCodeLength; i++) code += loginCodeAlphabet[randomInt(loginCodeAlphabet.length)];
  return code;
}

/** The stored hash of a normalized code. */
export const hashLoginCode = (code: string) => hashSecret(code);

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
