import { hash, randomBytes, timingSafeEqual } from "node:crypto";

/**
 * Every secret Outpost issues starts with a fixed, distinct, greppable prefix, so a leaked one is
 * recognised (and secret scanners can match it).
 */
export const secretPrefixes = {
  session: "ops_",
  apiKey: "opk_",
  agentKey: "opa_",
  gameClientSecret: "ogs_",
  /** Game OAuth access tokens (opaque, for userinfo only). */
  gameAccessToken: "ogt_",
  /** Game OAuth authorization codes (single use, 90 s). */
  gameAuthorizationCode: "ogx_",
  accountClientSecret: "oas_",
  /** Account OAuth access tokens (opaque, for userinfo only). */
  accountAccessToken: "oat_",
  /** Account OAuth refresh tokens (rotated on every use, 30 days idle). */
  accountRefreshToken: "ort_",
  /** Account OAuth authorization codes (single use, 90 s). */
  accountAuthorizationCode: "oax_",
  /** Account OAuth authorization requests waiting for a sign-in or a consent (10 min). */
  accountAuthorizationRequest: "oar_",
  /** Known-device tokens: HMAC-signed, never stored (core/auth/known-devices.ts). */
  knownDevice: "opd_",
  /** The assistant's tool-action execution tokens (single use, 5 minutes; core/ocelot/gate.ts). */
  ocelotExecutionToken: "oet_",
  /** Webhook signing secrets, as Standard Webhooks writes them (sealed under the KEK, not hashed: Outpost signs with them). */
  webhookSecret: "whsec_",
  /** Invitations to join an organization (single use, 7 days; the secret of the link). */
  invitation: "opi_",
  /** Email verification links (single use, 24 hours; the secret of the link mailed to the address). */
  emailVerification: "opv_",
} as const;

export type SecretKind = keyof typeof secretPrefixes;

/**
 * Identifiers that are public but still recognisable at a glance, with a prefix that no secret
 * uses (a client_id is never mistaken for its client_secret).
 */
export const identifierPrefixes = {
  gameClient: "ogc_",
  accountClient: "oac_",
} as const;

export type IdentifierKind = keyof typeof identifierPrefixes;

const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** `length` characters of base62 from the CSPRNG, without modulo bias. */
export function randomBase62(length: number): string {
  let out = "";
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248) out += alphabet[byte % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

export interface IssuedSecret {
  /** The whole secret, for the caller; never stored. */
  value: string;
  /** SHA-256 of the value, hex: what is stored and looked up. */
  hash: string;
  /** The first characters, for recognising the secret in a list. */
  displayPrefix: string;
}

/** A new secret of about 238 bits (40 base62 characters) after its kind's prefix. */
export function issueSecret(kind: SecretKind): IssuedSecret {
  const value = secretPrefixes[kind] + randomBase62(40);
  return { value, hash: hashSecret(value), displayPrefix: value.slice(0, 12) };
}

/** A new public identifier: its kind's prefix and 24 base62 characters (about 143 random bits). */
export function issueIdentifier(kind: IdentifierKind): string {
  return identifierPrefixes[kind] + randomBase62(24);
}

/** SHA-256 of the value's UTF-8, hex: what is stored and looked up. */
export function hashSecret(value: string): string {
  return hash("sha256", value, "hex");
}

/** Whether two hex hashes are equal, compared in constant time. */
export function hashesMatch(actualHash: string, expectedHash: string): boolean {
  const actual = Buffer.from(actualHash, "hex");
  const expected = Buffer.from(expectedHash, "hex");
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

/** Whether a string has the shape of a secret of this kind (cheap check before any lookup). */
export function looksLike(kind: SecretKind, value: string): boolean {
  return value.length === secretPrefixes[kind].length + 40 && value.startsWith(secretPrefixes[kind]);
}
