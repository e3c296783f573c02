/**
 * The signing keys in PostgreSQL: generating a sealed key, reading an issuer's keys, and the two
 * changes of stage (the first keys, a rotation), each in one transaction under a per-issuer
 * advisory lock, so concurrent instances take turns and the stages never fork.
 */
import { generateKeyPair, randomUUID } from "node:crypto";
import { promisify } from "node:util";
import { calculateJwkThumbprint } from "jose";
import type { EntityManager } from "@mikro-orm/postgresql";
import { SigningKey, type Issuer, type RsaPublicJwk, type Stage } from "../db/signing-key-entities.ts";
import { recordActivity } from "../activity/record.ts";
import { seal, type KeyEncryptionKey, type SealedKey } from "./key-encryption.ts";
import { inTransaction } from "../db/sql.ts";
import { lockIssuerKeys } from "./signing-key-queries.ts";

const generateRsaKeyPair = promisify(generateKeyPair);

/** A key made but not yet stored. */
export interface FreshKey {
  kid: string;
  publicJwk: RsaPublicJwk;
  sealed: SealedKey;
}

/** The kids in each stage. */
export interface KeyStages {
  current: string;
  next: string;
  /** None until the issuer's first rotation. */
  previous: string | null;
}

export type IssuerKeys = Partial<Record<Stage, SigningKey>>;

/** What a sealed key is bound to: the same key under another issuer or kid does not decrypt. */
export function sealLabel(issuer: Issuer, kid: string): string {
  return `${issuer}/${kid}`;
}

/** A new RSA 2048 key (generated on the thread pool), its kid the RFC 7638 thumbprint, sealed under the KEK. */
export async function generateKey(kek: KeyEncryptionKey, issuer: Issuer): Promise<FreshKey> {
  const { publicKey, privateKey } = await generateRsaKeyPair("rsa", { modulusLength: 2048, publicExponent: 0x10001 });
  const { n, e } = publicKey.export({ format: "jwk" });
  const publicJwk: RsaPublicJwk = { kty: "RSA", n: n!, e: e! };
  const kid = await calculateJwkThumbprint(publicJwk, "sha256");
  const pkcs8 = privateKey.export({ format: "der", type: "pkcs8" });
  try {
    return { kid, publicJwk, sealed: seal(kek, pkcs8, sealLabel(issuer, kid)) };
  } finally {
    pkcs8.fill(0);
  }
}

/** The issuer's keys by stage. */
export async function findKeys(em: EntityManager, issuer: Issuer): Promise<IssuerKeys> {
  const rows = await em.find(SigningKey, { issuer });
  return Object.fromEntries(rows.map((row) => [row.stage, row]));
}

/** Takes the issuer's signing-key lock until `tx` ends: changes to its keys take turns. */
export function lockIssuer(tx: EntityManager, issuer: Issuer): Promise<void> {
  return lockIssuerKeys(inTransaction(tx), issuer);
}

/** Runs `work` in a transaction that holds the issuer's lock, with the issuer's keys as they are then. */
export function withIssuerLock<T>(em: EntityManager, issuer: Issuer, work: (tx: EntityManager, keys: IssuerKeys) => Promise<T>): Promise<T> {
  return em.fork().transactional(async (tx) => {
    await lockIssuer(tx, issuer);
    return work(tx, await findKeys(tx, issuer));
  });
}

function addKey(tx: EntityManager, issuer: Issuer, key: FreshKey, stage: Stage, now: Date): void {
  tx.create(SigningKey, {
    id: randomUUID(),
    issuer,
    kid: key.kid,
    stage,
    publicJwk: key.publicJwk,
    privateKeyCiphertext: key.sealed.ciphertext,
    privateKeyIv: key.sealed.iv,
    privateKeyTag: key.sealed.tag,
    kekId: key.sealed.kekId,
    createdAt: now,
    activatedAt: stage === "next" ? null : now,
  });
}

/**
 * Stores a fresh `current` and `next` and records why: an issuer's first keys, or the keys that
 * replace a purged set (`withdrawn`). Call under {@link withIssuerLock}, with none stored.
 */
async function insertFreshPair(tx: EntityManager, issuer: Issuer, keys: [FreshKey, FreshKey], now: Date, withdrawn?: string[]): Promise<KeyStages> {
  addKey(tx, issuer, keys[0], "current", now);
  addKey(tx, issuer, keys[1], "next", now);
  recordActivity(tx, "system", {
    action: withdrawn ? "signing_keys.purged" : "signing_keys.created",
    targetType: "signing_keys",
    targetId: issuer,
    details: { current: keys[0].kid, next: keys[1].kid, ...(withdrawn && { withdrawn: withdrawn.join(" ") }) },
  });
  await tx.flush();
  return { current: keys[0].kid, next: keys[1].kid, previous: null };
}

/** Stores an issuer's first keys, `current` and `next`. Call under {@link withIssuerLock}, with none stored. */
export function insertFirstKeys(tx: EntityManager, issuer: Issuer, keys: [FreshKey, FreshKey], now: Date): Promise<KeyStages> {
  return insertFreshPair(tx, issuer, keys, now);
}

/**
 * previous ← current, current ← next, next ← `fresh`; the old previous is deleted. Call under
 * {@link withIssuerLock}. The statements run in this order so that the unique (issuer, stage)
 * index holds after each one.
 */
export async function shiftStages(
  tx: EntityManager,
  issuer: Issuer,
  keys: IssuerKeys,
  fresh: FreshKey,
  now: Date,
  trigger: "scheduled" | "on_demand",
): Promise<KeyStages> {
  const { current, next } = keys;
  if (!current || !next) throw new Error("the issuer has no signing keys to rotate");
  await tx.nativeDelete(SigningKey, { issuer, stage: "previous" });
  await tx.nativeUpdate(SigningKey, { id: current.id }, { stage: "previous" });
  await tx.nativeUpdate(SigningKey, { id: next.id }, { stage: "current", activatedAt: now });
  addKey(tx, issuer, fresh, "next", now);
  const stages = { current: next.kid, next: fresh.kid, previous: current.kid };
  recordActivity(tx, "system", {
    action: "signing_keys.rotated",
    targetType: "signing_keys",
    targetId: issuer,
    details: { current: stages.current, next: stages.next, previous: stages.previous, trigger, ...(keys.previous && { retired: keys.previous.kid }) },
  });
  await tx.flush();
  return stages;
}

/**
 * Withdraws every key of the issuer at once and stores two fresh ones (`current`, `next`): for a
 * key that may be compromised, which must not stay published as `previous`. Tokens it signed stop
 * verifying against the JWKS. Call under {@link withIssuerLock}.
 */
export async function purgeKeys(
  tx: EntityManager,
  issuer: Issuer,
  keys: IssuerKeys,
  fresh: [FreshKey, FreshKey],
  now: Date,
): Promise<KeyStages & { withdrawn: string[] }> {
  const withdrawn = Object.values(keys).map((key) => key.kid);
  await tx.nativeDelete(SigningKey, { issuer });
  return { ...(await insertFreshPair(tx, issuer, fresh, now, withdrawn)), withdrawn };
}
