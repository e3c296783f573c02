/**
 * Private keys at rest: AES-256-GCM under the key-encryption key (KEK) from the configuration.
 * Each sealed key records which KEK sealed it, so a wrong KEK is a clear error, not garbage, and
 * its additional data names the key, so a ciphertext moved to another row does not open.
 */
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from "node:crypto";

/** A KEY_ENCRYPTION_KEY is this many random bytes. */
export const keyEncryptionKeyBytes = 32;

export interface SealedKey {
  ciphertext: Uint8Array;
  iv: Uint8Array;
  tag: Uint8Array;
  /** {@link keyEncryptionKeyId} of the KEK that sealed it. */
  kekId: string;
}

/** The KEK, and its id (which is safe to store and to print). */
export interface KeyEncryptionKey {
  readonly id: string;
  readonly key: Buffer;
}

/** The signing keys cannot be opened with this KEK (another KEK sealed them, or they were altered). */
export class KeyEncryptionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "KeyEncryptionError";
  }
}

/**
 * A short, stable id of a KEK: an HMAC of a fixed label under the KEK, so it identifies the key
 * without revealing anything about it.
 */
export function keyEncryptionKeyId(key: Buffer): string {
  return createHmac("sha256", key).update("outpost key-encryption-key id").digest("base64url").slice(0, 16);
}

/**
 * A secret for another purpose, derived from the KEK (HMAC of the purpose under it), so every
 * instance sharing a KEK shares it too without one more setting — e.g. the hosted page's
 * proof-of-work HMAC key, which any instance must verify.
 */
export function derivedSecret(kek: KeyEncryptionKey, purpose: string): string {
  return createHmac("sha256", kek.key).update(`outpost derived secret: ${purpose}`).digest("base64url");
}

export function keyEncryptionKey(key: Buffer): KeyEncryptionKey {
  if (key.length !== keyEncryptionKeyBytes) throw new Error(`a key-encryption key is ${keyEncryptionKeyBytes} bytes, not ${key.length}`);
  return Object.freeze({ id: keyEncryptionKeyId(key), key: Buffer.from(key) });
}

/** Encrypts `plaintext` (a PKCS #8 private key, an integration's credentials), bound to `label` (the key's issuer and kid, the row's id). */
export function seal(kek: KeyEncryptionKey, plaintext: Buffer, label: string): SealedKey {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", kek.key, iv);
  cipher.setAAD(Buffer.from(label));
  const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return { ciphertext, iv, tag: cipher.getAuthTag(), kekId: kek.id };
}

/**
 * Refuses a KEK other than the one that sealed `what` ("signing key … was"): keys sealed under one
 * KEK can be neither opened nor joined by keys sealed under another.
 */
export function assertSealedWith(kek: KeyEncryptionKey, kekId: string, what: string): void {
  if (kekId === kek.id) return;
  throw new KeyEncryptionError(
    `${what} encrypted with key-encryption key ${kekId}, but KEY_ENCRYPTION_KEY is ${kek.id}; ` + "start Outpost with the KEY_ENCRYPTION_KEY the keys were created with",
  );
}

/**
 * Decrypts what {@link seal} produced with the same KEK and label; throws {@link KeyEncryptionError}
 * otherwise. `what` names the sealed value in that error (a signing key unless said).
 */
export function open(kek: KeyEncryptionKey, sealed: SealedKey, label: string, what = "signing key"): Buffer {
  assertSealedWith(kek, sealed.kekId, `${what} ${label} was`);
  try {
    const decipher = createDecipheriv("aes-256-gcm", kek.key, sealed.iv);
    decipher.setAAD(Buffer.from(label));
    decipher.setAuthTag(sealed.tag);
    return Buffer.concat([decipher.update(sealed.ciphertext), decipher.final()]);
  } catch {
    throw new KeyEncryptionError(`${what} ${label} does not decrypt with key-encryption key ${kek.id}: it was altered in the database`);
  }
}

/** {@link seal} into one value to store: the KEK's id (16 characters), the IV, the tag, then the ciphertext. */
export function sealToBytes(kek: KeyEncryptionKey, plaintext: Uint8Array, label: string): Buffer {
  const sealed = seal(kek, Buffer.from(plaintext), label);
  return Buffer.concat([Buffer.from(sealed.kekId, "latin1"), sealed.iv, sealed.tag, sealed.ciphertext]);
}

/** {@link open} of what {@link sealToBytes} gave. */
export function openFromBytes(kek: KeyEncryptionKey, bytes: Buffer, label: string, what: string): Buffer {
  const sealed = { kekId: bytes.subarray(0, 16).toString("latin1"), iv: bytes.subarray(16, 28), tag: bytes.subarray(28, 44), ciphertext: bytes.subarray(44) };
  return open(kek, sealed, label, what);
}
