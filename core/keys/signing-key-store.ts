/**
 * The signing keys in PostgreSQL: generating a sealed key, reading an issuer's keys, and the two
 * changes of stage (the first keys, a rotation), each in one transaction under a per-issuer
 * advisory lock, so concurrent instances take turns and the stages never fork.
 */
import { generateKeyPair, randomUUID } from "node:crypto";
import { promisify } from "node:util";
import { calculateJwkThumbprint } from "jose";
import type { EntityManager } from "@mikro-orm/postgresql";
import { SigningKey, type Issuer, type PublicKeyMembers, type Stage } from "../db/signing-key-entities.ts";
import { signingAlgs, type SigningAlg } from "../../contract/issuers.ts";
import { recordActivity } from "../activity/record.ts";
import { seal, type KeyEncryptionKey, type SealedKey } from "./key-encryption.ts";
import { inTransaction } from "../db/sql.ts";
import { lockIssuerKeys } from "./signing-key-queries.ts";

const generatePair = promisify(generateKeyPair);

/** A key made but not yet stored. */
export interface FreshKey {
  kid: string;
  alg: SigningAlg;
  publicJwk: PublicKeyMembers;
  sealed: SealedKey;
}

/** The kids in each stage of one algorithm's keys. */
export interface KeyStages {
  current: string;
  next: string;
  /** None until the issuer's first rotation. */
  previous: string | null;
}

/** The kids in each stage, per algorithm. */
export type StagesByAlg = Record<SigningAlg, KeyStages>;

/** One algorithm's keys by stage. */
export type AlgKeys = Partial<Record<Stage, SigningKey>>;

/** An issuer's keys, by algorithm and stage. */
export type IssuerKeys = Record<SigningAlg, AlgKeys>;

/** A fresh key for each algorithm (what a rotation or a purge adds). */
export type FreshKeys = Record<SigningAlg, FreshKey>;

/** What a sealed key is bound to: the same key under another issuer or kid does not decrypt. */
export function sealLabel(issuer: Issuer, kid: string): string {
  return `${issuer}/${kid}`;
}

/** A new key pair of the algorithm's kind, generated on the thread pool. */
function generatePairFor(alg: SigningAlg) {
  switch (alg) {
    case "RS256":
      return generatePair("rsa", { modulusLength: 2048, publicExponent: 0x10001 });
    case "ES256":
      return generatePair("ec", { namedCurve: "P-256" });
    case "EdDSA":
      return generatePair("ed25519");
  }
}

/** The public members of an exported JWK that describe the key, and nothing else. */
function publicMembers(jwk: Record<string, unknown>): PublicKeyMembers {
  if (jwk.kty === "RSA") return { kty: "RSA", n: String(jwk.n), e: String(jwk.e) };
  if (jwk.kty === "EC") return { kty: "EC", crv: "P-256", x: String(jwk.x), y: String(jwk.y) };
  return { kty: "OKP", crv: "Ed25519", x: String(jwk.x) };
}

/** A new key for `alg` (RSA 2048, P-256 or Ed25519), its kid the RFC 7638 thumbprint, sealed under the KEK. */
export async function generateKey(kek: KeyEncryptionKey, issuer: Issuer, alg: SigningAlg): Promise<FreshKey> {
  const { publicKey, privateKey } = await generatePairFor(alg);
  const publicJwk = publicMembers(publicKey.export({ format: "jwk" }) as Record<string, unknown>);
  const kid = await calculateJwkThumbprint(publicJwk, "sha256");
  const pkcs8 = privateKey.export({ format: "der", type: "pkcs8" });
  try {
    return { kid, alg, publicJwk, sealed: seal(kek, pkcs8, sealLabel(issuer, kid)) };
  } finally {
    pkcs8.fill(0);
  }
}

/** A fresh key for every algorithm. */
export async function generateKeys(kek: KeyEncryptionKey, issuer: Issuer): Promise<FreshKeys> {
  const made = await Promise.all(signingAlgs.map((alg) => generateKey(kek, issuer, alg)));
  return Object.fromEntries(made.map((key) => [key.alg, key])) as FreshKeys;
}

/** The issuer's keys by algorithm and stage. */
export async function findKeys(em: EntityManager, issuer: Issuer): Promise<IssuerKeys> {
  const rows = await em.find(SigningKey, { issuer });
  const keys = Object.fromEntries(signingAlgs.map((alg) => [alg, {}])) as IssuerKeys;
  for (const row of rows) keys[row.alg as SigningAlg][row.stage] = row;
  return keys;
}

/** Every key of the issuer, whatever its algorithm and stage. */
export const allKeys = (keys: IssuerKeys): SigningKey[] => signingAlgs.flatMap((alg) => Object.values(keys[alg]));

/** The algorithms whose keys are not yet made (no current or no next). */
export const missingAlgs = (keys: IssuerKeys): SigningAlg[] => signingAlgs.filter((alg) => !keys[alg].current || !keys[alg].next);

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
    alg: key.alg,
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
 * Stores a fresh `current` and `next` of one algorithm and records why: its first keys, or the
 * keys that replace a purged set (`withdrawn`). Call under {@link withIssuerLock}, with none of
 * the algorithm stored.
 */
async function insertFreshPair(tx: EntityManager, issuer: Issuer, keys: [FreshKey, FreshKey], now: Date, withdrawn?: string[]): Promise<KeyStages> {
  addKey(tx, issuer, keys[0], "current", now);
  addKey(tx, issuer, keys[1], "next", now);
  recordActivity(tx, "system", {
    action: withdrawn ? "signing_keys.purged" : "signing_keys.created",
    targetType: "signing_keys",
    targetId: issuer,
    details: { alg: keys[0].alg, current: keys[0].kid, next: keys[1].kid, ...(withdrawn?.length && { withdrawn: withdrawn.join(" ") }) },
  });
  await tx.flush();
  return { current: keys[0].kid, next: keys[1].kid, previous: null };
}

/** Stores an algorithm's first keys, `current` and `next`. Call under {@link withIssuerLock}, with none of it stored. */
export function insertFirstKeys(tx: EntityManager, issuer: Issuer, keys: [FreshKey, FreshKey], now: Date): Promise<KeyStages> {
  return insertFreshPair(tx, issuer, keys, now);
}

/**
 * For each algorithm: previous ← current, current ← next, next ← `fresh`; the old previous is
 * deleted. Call under {@link withIssuerLock}. The statements run in this order so that the unique
 * (issuer, alg, stage) index holds after each one.
 */
export async function shiftStages(
  tx: EntityManager,
  issuer: Issuer,
  keys: IssuerKeys,
  fresh: FreshKeys,
  now: Date,
  trigger: "scheduled" | "on_demand",
): Promise<StagesByAlg> {
  const shifted = {} as StagesByAlg;
  for (const alg of signingAlgs) {
    const { current, next, previous } = keys[alg];
    if (!current || !next) throw new Error(`the issuer has no ${alg} signing keys to rotate`);
    await tx.nativeDelete(SigningKey, { issuer, alg, stage: "previous" });
    await tx.nativeUpdate(SigningKey, { id: current.id }, { stage: "previous" });
    await tx.nativeUpdate(SigningKey, { id: next.id }, { stage: "current", activatedAt: now });
    addKey(tx, issuer, fresh[alg], "next", now);
    const stages = { current: next.kid, next: fresh[alg].kid, previous: current.kid };
    recordActivity(tx, "system", {
      action: "signing_keys.rotated",
      targetType: "signing_keys",
      targetId: issuer,
      details: { alg, ...stages, trigger, ...(previous && { retired: previous.kid }) },
    });
    shifted[alg] = stages;
  }
  await tx.flush();
  return shifted;
}

/**
 * Withdraws every key of the issuer at once and stores two fresh ones per algorithm (`current`,
 * `next`): for a key that may be compromised, which must not stay published as `previous`.
 * Tokens it signed stop verifying against the JWKS. Call under {@link withIssuerLock}.
 */
export async function purgeKeys(
  tx: EntityManager,
  issuer: Issuer,
  keys: IssuerKeys,
  fresh: [FreshKeys, FreshKeys],
  now: Date,
): Promise<{ stages: StagesByAlg; withdrawn: string[] }> {
  const withdrawn = allKeys(keys).map((key) => key.kid);
  await tx.nativeDelete(SigningKey, { issuer });
  const stages = {} as StagesByAlg;
  for (const alg of signingAlgs) {
    const gone = Object.values(keys[alg]).map((key) => key.kid);
    stages[alg] = await insertFreshPair(tx, issuer, [fresh[0][alg], fresh[1][alg]], now, gone);
  }
  return { stages, withdrawn };
}
