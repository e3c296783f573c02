/**
 * The issuers' signing keys, as services use them: sign a token with the issuer's current key,
 * publish the issuer's JWKS, rotate. Keys rotate in stages (next → current → previous) and all
 * three are published, so a verifier holding a cached JWKS already knows the key that signs after
 * a rotation and still knows the one that signed before it.
 *
 * Each process caches an issuer's keys (public parts, and the current private key, unsealed once
 * into a KeyObject held only here) and re-reads them after a rotation here and otherwise at least
 * every {@link defaultCacheTtlMs}: another instance may have rotated, and since the key this one
 * still signs with stays published as `previous`, a short lag breaks no verifier. A purge (a key
 * that may be compromised) cannot wait that long: serving instances call `refresh` every few
 * seconds, which compares the stored kids with the cached ones.
 *
 * Each issuer has a key set per algorithm (RS256, ES256, EdDSA; a client chooses the one of its ID
 * tokens), rotated together and all published.
 *
 * A token is a compact JWS (RFC 7515 §7.1) whose signature the signer pool's threads compute
 * (core/keys/signer-pool.ts), off the event loop. It is written here rather than with jose's
 * SignJWT over WebCrypto because the token endpoint signs on every exchange: measured here, that
 * path cost the event loop about 70 µs per token against about 30 µs for this one (tests verify
 * every token with jose).
 */
import { createPrivateKey, type KeyObject } from "node:crypto";
import type { JWTHeaderParameters, JWTPayload } from "jose";
import type { Logger } from "pino";
import type { Orm } from "../db/orm.ts";
import type { Clock } from "../clock.ts";
import { issuers, type Issuer, type PublicKeyMembers, type SigningKey } from "../db/signing-key-entities.ts";
import { defaultSigningAlg, signingAlgs, type SigningAlg } from "../../contract/issuers.ts";
import { assertSealedWith, open, type KeyEncryptionKey } from "./key-encryption.ts";
import type { SignerPool } from "./signer-pool.ts";
import {
  allKeys,
  findKeys,
  generateKey,
  generateKeys,
  insertFirstKeys,
  missingAlgs,
  purgeKeys,
  sealLabel,
  shiftStages,
  withIssuerLock,
  type IssuerKeys,
  type StagesByAlg,
} from "./signing-key-store.ts";

export type { Issuer, SigningAlg, StagesByAlg };
export type { KeyStages } from "./signing-key-store.ts";

export const defaultCacheTtlMs = 60_000;

/** A public key as the JWKS publishes it: no private member (`d`, `p`, `q`, `dp`, `dq`, `qi`) ever. */
export type PublicJwk = PublicKeyMembers & { kid: string; use: "sig"; alg: SigningAlg };

export interface Jwks {
  keys: PublicJwk[];
}

/** Header parameters a caller may add (e.g. `typ`); `alg` and `kid` are always the signer's. */
export type HeaderExtras = Omit<JWTHeaderParameters, "alg" | "kid" | "b64" | "crit">;

export interface SigningKeys {
  /** A compact JWS of `payload` (claims as given) under the issuer's current key of `alg` (default RS256). */
  sign(issuer: Issuer, payload: JWTPayload, header?: HeaderExtras, alg?: SigningAlg): Promise<string>;
  /** The issuer's public keys: per algorithm, current, next and previous (once there is one). */
  jwks(issuer: Issuer): Promise<Jwks>;
  /** Rotates every algorithm's keys now: previous ← current, current ← next, next ← a new key. Returns the new stages. */
  rotate(issuer: Issuer): Promise<StagesByAlg>;
  /**
   * Withdraws all of the issuer's keys (a key may be compromised) and makes a fresh current and
   * next. They leave this instance's JWKS at once, and other instances' at their next
   * {@link SigningKeys.refresh}. Returns the new stages and the kids withdrawn.
   */
  purge(issuer: Issuer): Promise<{ stages: StagesByAlg; withdrawn: string[] }>;
  /**
   * Drops each cached issuer whose stored kids changed (another instance or the CLI rotated or
   * purged), so the next JWKS and signature read them again. One small query per cached issuer.
   */
  refresh(): Promise<void>;
  /**
   * Rotates each issuer whose current key has been current for the rotation period, and checks
   * that the stored keys were sealed with this KEK. Returns the issuers rotated.
   */
  rotateDue(): Promise<Issuer[]>;
}

export interface SigningKeysDeps {
  orm: Orm;
  clock: Clock;
  logger: Logger;
  /** The KEK, resolved on first need (the embedded default may generate it into DATA_DIR). */
  keyEncryptionKey: () => KeyEncryptionKey;
  /** How long a key stays current before the scheduled rotation replaces it. */
  rotationDays: number;
  /** How long the keys read from the database are used before reading them again, by `clock`. */
  cacheTtlMs?: number;
  /** The threads that compute the signatures (one pool per process, built in the composition root). */
  signer: SignerPool;
}

/** An algorithm's current key: its kid, and its private half unsealed on first use. */
interface CurrentKey {
  kid: string;
  privateKey: () => Promise<KeyObject>;
}

interface Cached {
  loadedAt: number;
  jwks: Jwks;
  current: Record<SigningAlg, CurrentKey>;
}

/** A read in flight, or done (`value`). */
interface CacheEntry {
  loading: Promise<Cached>;
  value?: Cached;
}

const stageOrder = ["current", "next", "previous"] as const;

const base64url = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url");

function publicJwk(key: SigningKey): PublicJwk {
  return { ...key.publicJwk, kid: key.kid, use: "sig", alg: key.alg };
}

function assertAllSealedWith(kek: KeyEncryptionKey, issuer: Issuer, keys: IssuerKeys): void {
  for (const key of allKeys(keys)) assertSealedWith(kek, key.kekId, `the ${issuer} issuer's signing keys were`);
}

/** `make`'s promise, made once; made again after a failure. */
function memo<T>(make: () => Promise<T>): () => Promise<T> {
  let value: Promise<T> | undefined;
  return () =>
    (value ??= make().catch((error: unknown) => {
      value = undefined;
      throw error;
    }));
}

/**
 * The issuer's keys, making each algorithm's first two on first use (an issuer from before
 * ES256 and EdDSA gets theirs then, beside its RS256 keys).
 */
async function keysOf({ orm, clock, logger, keyEncryptionKey }: SigningKeysDeps, issuer: Issuer): Promise<IssuerKeys> {
  const keys = await findKeys(orm.em.fork(), issuer);
  const missing = missingAlgs(keys);
  if (!missing.length) return keys;
  const kek = keyEncryptionKey();
  const fresh = await Promise.all(missing.map(async (alg) => [await generateKey(kek, issuer, alg), await generateKey(kek, issuer, alg)] as const));
  return withIssuerLock(orm.em, issuer, async (tx, locked) => {
    const stillMissing = missingAlgs(locked); // another caller may have made some meanwhile
    for (const pair of fresh) {
      if (!stillMissing.includes(pair[0].alg)) continue;
      const stages = await insertFirstKeys(tx, issuer, [pair[0], pair[1]], clock.now());
      logger.info({ issuer, alg: pair[0].alg, ...stages }, "signing keys created");
    }
    return stillMissing.length ? findKeys(tx, issuer) : locked;
  });
}

/** The current key's private half, unsealed with the KEK on first use (and again after a failure). */
function unsealer(kek: () => KeyEncryptionKey, issuer: Issuer, current: SigningKey): () => Promise<KeyObject> {
  return memo(async () => {
    const sealed = { ciphertext: current.privateKeyCiphertext, iv: current.privateKeyIv, tag: current.privateKeyTag, kekId: current.kekId };
    const pkcs8 = open(kek(), sealed, sealLabel(issuer, current.kid));
    try {
      return createPrivateKey({ key: pkcs8, format: "der", type: "pkcs8" });
    } finally {
      pkcs8.fill(0);
    }
  });
}

/** The issuer's keys in JWKS order: by algorithm (RS256 first), then current, next, previous. */
const inJwksOrder = (keys: IssuerKeys): SigningKey[] => signingAlgs.flatMap((alg) => stageOrder.flatMap((stage) => keys[alg][stage] ?? []));

/** Reads the issuer's keys for the cache; an unchanged current key keeps the one `before` unsealed. */
async function load(deps: SigningKeysDeps, issuer: Issuer, before: Cached | undefined): Promise<Cached> {
  const loadedAt = deps.clock.now().getTime();
  const keys = await keysOf(deps, issuer);
  const current = {} as Record<SigningAlg, CurrentKey>;
  for (const alg of signingAlgs) {
    const key = keys[alg].current!;
    const kept = before?.current[alg];
    current[alg] = kept?.kid === key.kid ? kept : { kid: key.kid, privateKey: unsealer(deps.keyEncryptionKey, issuer, key) };
  }
  return { loadedAt, jwks: { keys: inJwksOrder(keys).map(publicJwk) }, current };
}

/** The kids the issuer's keys have in the database, in JWKS order. */
async function storedKids(orm: Orm, issuer: Issuer): Promise<string> {
  return inJwksOrder(await findKeys(orm.em.fork(), issuer))
    .map((key) => key.kid)
    .join();
}

/** Shifts the issuer's stages (previous ← current ← next ← a new key, per algorithm) if `due` says so under the issuer's lock. */
async function shiftIfDue(deps: SigningKeysDeps, issuer: Issuer, trigger: "scheduled" | "on_demand", due: (keys: IssuerKeys) => boolean) {
  const kek = deps.keyEncryptionKey();
  const fresh = await generateKeys(kek, issuer);
  const stages = await withIssuerLock(deps.orm.em, issuer, async (tx, keys) => {
    assertAllSealedWith(kek, issuer, keys);
    return due(keys) ? shiftStages(tx, issuer, keys, fresh, deps.clock.now(), trigger) : undefined;
  });
  if (stages) deps.logger.info({ issuer, trigger, stages }, "signing keys rotated");
  return stages;
}

export function createSigningKeys(deps: SigningKeysDeps): SigningKeys {
  const { orm, clock, logger } = deps;
  const cacheTtlMs = deps.cacheTtlMs ?? defaultCacheTtlMs;
  const rotationMs = deps.rotationDays * 86_400_000;
  const cache = new Map<Issuer, CacheEntry>();

  /** The cached keys, re-read when stale; concurrent callers share one read. */
  function cached(issuer: Issuer): Promise<Cached> {
    const entry = cache.get(issuer);
    const age = entry?.value && clock.now().getTime() - entry.value.loadedAt;
    // A clock set back counts as stale too, so no cache outlives its time by the clock's jump.
    if (entry && (age === undefined || (age >= 0 && age < cacheTtlMs))) return entry.loading;
    const fresh: CacheEntry = { loading: load(deps, issuer, entry?.value) };
    fresh.loading.then(
      (value) => (fresh.value = value),
      () => cache.get(issuer) === fresh && cache.delete(issuer),
    );
    cache.set(issuer, fresh);
    return fresh.loading;
  }

  async function rotateWith(issuer: Issuer, trigger: "scheduled" | "on_demand", due: (keys: IssuerKeys) => boolean) {
    const stages = await shiftIfDue(deps, issuer, trigger, due);
    if (stages) cache.delete(issuer);
    return stages;
  }

  return {
    async sign(issuer, payload, header = {}, alg = defaultSigningAlg) {
      const current = (await cached(issuer)).current[alg];
      const key = await current.privateKey();
      const input = `${base64url({ ...header, alg, kid: current.kid })}.${base64url(payload)}`;
      return `${input}.${await deps.signer.sign(current.kid, key, input)}`;
    },

    async jwks(issuer) {
      const { jwks } = await cached(issuer);
      return { keys: jwks.keys.map((key) => ({ ...key })) };
    },

    async rotate(issuer) {
      await keysOf(deps, issuer);
      return (await rotateWith(issuer, "on_demand", () => true))!;
    },

    async purge(issuer) {
      const kek = deps.keyEncryptionKey();
      const fresh = await Promise.all([generateKeys(kek, issuer), generateKeys(kek, issuer)]);
      // The KEK is not checked against the old keys: they are being thrown away, perhaps because
      // the old KEK is what leaked.
      const result = await withIssuerLock(orm.em, issuer, (tx, keys) => purgeKeys(tx, issuer, keys, fresh, clock.now()));
      cache.delete(issuer);
      logger.info({ issuer, stages: result.stages, withdrawn: result.withdrawn }, "signing keys purged");
      return result;
    },

    async refresh() {
      for (const [issuer, entry] of [...cache]) {
        if (!entry.value) continue; // a read in flight is fresh already
        const cachedKids = entry.value.jwks.keys.map((key) => key.kid).join();
        if ((await storedKids(orm, issuer)) !== cachedKids && cache.get(issuer) === entry) cache.delete(issuer);
      }
    },

    async rotateDue() {
      const kek = deps.keyEncryptionKey();
      // The algorithms rotate together; an algorithm made later (its keys younger) goes along.
      const isDue = (keys: IssuerKeys) =>
        signingAlgs.some((alg) => {
          const activatedAt = keys[alg].current?.activatedAt;
          return !!activatedAt && clock.now().getTime() - activatedAt.getTime() >= rotationMs;
        });
      const rotated: Issuer[] = [];
      for (const issuer of issuers) {
        const keys = await findKeys(orm.em.fork(), issuer);
        assertAllSealedWith(kek, issuer, keys);
        // Checked again under the lock: of instances that find it due together, one rotates.
        if (isDue(keys) && (await rotateWith(issuer, "scheduled", isDue))) rotated.push(issuer);
      }
      return rotated;
    },
  };
}
