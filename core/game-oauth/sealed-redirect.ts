/**
 * The redirect URL of a completed sign-in carries its authorization code, and the instance that
 * completes the sign-in (the one the agent reports to) never holds the browser's binding, so the
 * URL cannot be sealed the way the login code is. It is sealed to a public key instead: when the
 * sign-in starts, an X25519 key pair is derived from the browser binding hash and only its public
 * half is stored; completion encrypts to it (an ephemeral X25519 key, HKDF-SHA-256, AES-256-GCM);
 * only a request bearing the binding can derive the private half and open it. So a reader of the
 * database finds neither the login code nor the authorization code (stored as SHA-256 only).
 */
import {
  createCipheriv,
  createDecipheriv,
  createHmac,
  createPrivateKey,
  createPublicKey,
  diffieHellman,
  generateKeyPairSync,
  hkdfSync,
  randomBytes,
  type KeyObject,
} from "node:crypto";

/** DER prefixes of an X25519 key (RFC 8410): PKCS #8 private, SubjectPublicKeyInfo public. */
const pkcs8Prefix = Buffer.from("302e020100300506032b656e04220420", "hex");
const spkiPrefix = Buffer.from("302a300506032b656e032100", "hex");
const info = Buffer.from("outpost completed sign-in redirect");

function privateKeyOf(bindingHash: string): KeyObject {
  const scalar = createHmac("sha256", Buffer.from(bindingHash, "hex")).update("outpost completion key").digest();
  return createPrivateKey({ key: Buffer.concat([pkcs8Prefix, scalar]), format: "der", type: "pkcs8" });
}

const rawPublic = (key: KeyObject) => (key.export({ format: "der", type: "spki" }) as Buffer).subarray(spkiPrefix.length);
const publicKeyFrom = (raw: Buffer) => createPublicKey({ key: Buffer.concat([spkiPrefix, raw]), format: "der", type: "spki" });

function keyFor(shared: Buffer, ephemeral: Buffer, recipient: Buffer): Buffer {
  return Buffer.from(hkdfSync("sha256", shared, Buffer.concat([ephemeral, recipient]), info, 32));
}

/** The public key to store with a new session (base64url, 43 characters). */
export function completionKey(bindingHash: string): string {
  return rawPublic(createPublicKey(privateKeyOf(bindingHash))).toString("base64url");
}

/** `text` sealed to a session's completion key: base64url of ephemeral key, iv, tag and ciphertext. */
export function sealToBrowser(completionKeyText: string, text: string): string {
  const recipient = Buffer.from(completionKeyText, "base64url");
  const ephemeral = generateKeyPairSync("x25519");
  const ephemeralRaw = rawPublic(ephemeral.publicKey);
  const shared = diffieHellman({ privateKey: ephemeral.privateKey, publicKey: publicKeyFrom(recipient) });
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", keyFor(shared, ephemeralRaw, recipient), iv);
  const body = Buffer.concat([cipher.update(text, "utf8"), cipher.final()]);
  return Buffer.concat([ephemeralRaw, iv, cipher.getAuthTag(), body]).toString("base64url");
}

/** Opens what {@link sealToBrowser} sealed, with the binding the session was started with (throws otherwise). */
export function openAsBrowser(sealed: string, bindingHash: string): string {
  const raw = Buffer.from(sealed, "base64url");
  const ephemeralRaw = raw.subarray(0, 32);
  const privateKey = privateKeyOf(bindingHash);
  const recipient = rawPublic(createPublicKey(privateKey));
  const shared = diffieHellman({ privateKey, publicKey: publicKeyFrom(ephemeralRaw) });
  const decipher = createDecipheriv("aes-256-gcm", keyFor(shared, ephemeralRaw, recipient), raw.subarray(32, 44));
  decipher.setAuthTag(raw.subarray(44, 60));
  return Buffer.concat([decipher.update(raw.subarray(60)), decipher.final()]).toString("utf8");
}
