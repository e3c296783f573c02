/**
 * Known devices (OWASP's "device cookies", against targeted lockout): a browser that signed in to
 * an account holds a token naming a random device id and an expiry, signed with an HMAC over them
 * and the account's email under a key derived from KEY_ENCRYPTION_KEY. A sign-in that presents a
 * valid token for its email is counted per device (and per email and address) instead of against
 * the account's limit over all addresses and its address's limit, which strangers can spend: ten
 * addresses guessing cannot keep the owner's own browser out. Nothing is stored; every instance
 * sharing the KEK verifies every other's tokens. The token holds no email.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { randomBase62, secretPrefixes } from "../../contract/secrets.ts";

/** The purpose the tokens' HMAC key is derived for (core/keys/key-encryption.ts `derivedSecret`). */
export const knownDeviceKeyPurpose = "known device cookie";

/** How long a browser stays known after its last sign-in: 180 days. */
export const knownDeviceLifetimeSeconds = 180 * 86_400;

export interface KnownDeviceToken {
  token: string;
  expiresAt: Date;
}

export interface KnownDevices {
  /** A token for this browser and account: for `deviceId` (a device already known), or a new device. */
  issue(normalizedEmail: string, now: Date, deviceId?: string): KnownDeviceToken;
  /** The device id of `token` when it is well formed, signed for this email and unexpired; undefined otherwise. */
  verify(token: string, normalizedEmail: string, now: Date): string | undefined;
}

const shape = new RegExp(`^${secretPrefixes.knownDevice}([0-9A-Za-z]{22})\\.(\\d{1,12})\\.([A-Za-z0-9_-]{43})$`);

/** Tokens keyed by `secret()`, asked once, on first use (the composition root derives it from the KEK). */
export function createKnownDevices(secret: () => string): KnownDevices {
  let key: Buffer | undefined;
  const mac = (deviceId: string, expires: string, email: string) =>
    createHmac("sha256", (key ??= Buffer.from(secret(), "utf8")))
      .update(`${deviceId}.${expires}\n${email}`, "utf8")
      .digest();
  return {
    issue(normalizedEmail, now, deviceId = randomBase62(22)) {
      const expires = String(Math.floor(now.getTime() / 1000) + knownDeviceLifetimeSeconds);
      const signature = mac(deviceId, expires, normalizedEmail).toString("base64url");
      return { token: `${secretPrefixes.knownDevice}${deviceId}.${expires}.${signature}`, expiresAt: new Date(Number(expires) * 1000) };
    },
    verify(token, normalizedEmail, now) {
      const match = shape.exec(token);
      if (!match) return undefined;
      const [, deviceId, expires, signature] = match;
      // Compared as written, not decoded: base64url has more than one spelling of the same bytes
      // (the last character's spare bits), and only the one this issued is the token.
      const expected = Buffer.from(mac(deviceId, expires, normalizedEmail).toString("base64url"));
      const given = Buffer.from(signature);
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
      return Number(expires) * 1000 > now.getTime() ? deviceId : undefined;
    },
  };
}
