/**
 * The issuers' signing keys (issues 4, 5 and 31): one row per key, a set per issuer and algorithm
 * (RS256, ES256, EdDSA), at most one key per issuer, algorithm and stage (a unique index, so no
 * race can publish two). A key leaves `previous` by being
 * deleted: every token it signed expired long before (tokens live minutes, a stage lasts days),
 * and a private key that no longer signs or verifies anything is safest destroyed. Rotations stay
 * in the activity log with their kids.
 */
import { randomUUID } from "node:crypto";
import { defineEntity, p, type InferEntity } from "@mikro-orm/core";
import { defaultSigningAlg, type SigningAlg } from "../../contract/issuers.ts";

export const issuers = ["game", "account"] as const;
/** Which OpenID Connect issuer a key signs for; the two share no keys. */
export type Issuer = (typeof issuers)[number];

export const stages = ["next", "current", "previous"] as const;
/** `current` signs; `next` and `previous` are published so verifiers with a cached JWKS keep working. */
export type Stage = (typeof stages)[number];

/** The public half of a key, as RFC 7517 (RSA, EC) and RFC 8037 (OKP) write it. */
export type PublicKeyMembers = { kty: "RSA"; n: string; e: string } | { kty: "EC"; crv: "P-256"; x: string; y: string } | { kty: "OKP"; crv: "Ed25519"; x: string };

export const SigningKey = defineEntity({
  name: "SigningKey",
  tableName: "signing_keys",
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => randomUUID()),
    issuer: p.string().length(16).$type<Issuer>(),
    /** The RFC 7638 thumbprint of the public key. */
    kid: p.string().length(64).unique(),
    stage: p.string().length(16).$type<Stage>(),
    alg: p.string().length(8).$type<SigningAlg>().default(defaultSigningAlg),
    publicJwk: p.json<PublicKeyMembers>(),
    /** The PKCS #8 private key, AES-256-GCM under the KEK; with its IV and tag. */
    privateKeyCiphertext: p.blob(),
    privateKeyIv: p.blob(),
    privateKeyTag: p.blob(),
    /** Which key-encryption key sealed it (an id, not the key). */
    kekId: p.string().length(32),
    createdAt: p.datetime(),
    /** When it became `current`; null while `next`. */
    activatedAt: p.datetime().nullable(),
  },
  uniques: [{ properties: ["issuer", "alg", "stage"], name: "signing_keys_issuer_alg_stage_unique" }],
});
export type SigningKey = InferEntity<typeof SigningKey>;

export const signingKeyEntities = [SigningKey];
