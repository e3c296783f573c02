/**
 * The deployment's VAPID key pair (RFC 8292): one P-256 key for every instance, made on first
 * need. Instances that need it at once each make one and try to store it; the first stored wins
 * (insert … on conflict do nothing) and all read that one back. The private key is kept only
 * sealed under the key-encryption key, like the signing keys (core/keys/key-encryption.ts).
 */
import { createECDH } from "node:crypto";
import type { EntityManager } from "@mikro-orm/postgresql";
import { assertSealedWith, KeyEncryptionError, open, seal, type KeyEncryptionKey } from "../keys/key-encryption.ts";
import { inTransaction, type SqlRunner } from "../db/sql.ts";
import { insertVapidKeyIfNone, selectVapidKey, updateVapidKeySeal, type VapidKeyColumns } from "./push-queries.ts";

/** What a sealed VAPID private key is bound to. */
const sealLabel = "vapid";

export interface VapidKeyPair {
  /** The uncompressed public point (65 bytes), base64url without padding. */
  publicKey: string;
  /** The private scalar (32 bytes), base64url without padding. */
  privateKey: string;
}

export interface VapidKeys {
  /** The key pair, made and stored if the deployment has none yet; kept once read. */
  get(query: SqlRunner, now: Date): Promise<VapidKeyPair>;
}

/** P-256 private scalars are 32 bytes. */
const scalarBytes = 32;

/**
 * The scalar as 32 bytes. node:crypto gives it without leading zero bytes (31 bytes or fewer for
 * about one key in 256), which web-push refuses ("should be 32 bytes long"): every push of that
 * deployment would fail. Returns a new buffer and wipes the one given; the caller wipes the result.
 */
function fullScalar(privateKey: Buffer): Buffer {
  const full = Buffer.alloc(scalarBytes);
  privateKey.copy(full, scalarBytes - privateKey.length);
  privateKey.fill(0);
  return full;
}

function freshRow(kek: KeyEncryptionKey): VapidKeyColumns {
  const ecdh = createECDH("prime256v1");
  ecdh.generateKeys();
  const privateKey = fullScalar(ecdh.getPrivateKey());
  try {
    const sealed = seal(kek, privateKey, sealLabel);
    return {
      public_key: ecdh.getPublicKey().toString("base64url"),
      private_key_ciphertext: sealed.ciphertext,
      private_key_iv: sealed.iv,
      private_key_tag: sealed.tag,
      kek_id: sealed.kekId,
    };
  } finally {
    privateKey.fill(0);
  }
}

function openRow(kek: KeyEncryptionKey, row: VapidKeyColumns): VapidKeyPair {
  assertSealedWith(kek, row.kek_id, "the VAPID key was");
  const sealed = { ciphertext: row.private_key_ciphertext, iv: row.private_key_iv, tag: row.private_key_tag, kekId: row.kek_id };
  // A key stored before scalars were kept at 32 bytes may be shorter.
  const privateKey = fullScalar(open(kek, sealed, sealLabel));
  try {
    // The stored public key must be the private key's: a swapped row is refused, not used.
    const ecdh = createECDH("prime256v1");
    ecdh.setPrivateKey(privateKey);
    if (ecdh.getPublicKey().toString("base64url") !== row.public_key) throw new KeyEncryptionError("the VAPID public key does not match its private key");
    return { publicKey: row.public_key, privateKey: privateKey.toString("base64url") };
  } finally {
    privateKey.fill(0);
  }
}

/** Built once per process in the composition root; the opened key is kept for the process's life. */
export function createVapidKeys(keyEncryptionKey: () => KeyEncryptionKey): VapidKeys {
  let known: VapidKeyPair | undefined;
  return {
    async get(query, now) {
      if (known) return known;
      let row = await selectVapidKey(query);
      if (!row) {
        await insertVapidKeyIfNone(query, freshRow(keyEncryptionKey()), now);
        row = await selectVapidKey(query);
        if (!row) throw new Error("the VAPID key was stored but cannot be read back");
      }
      known = openRow(keyEncryptionKey(), row);
      return known;
    },
  };
}

/**
 * For `outpost keys rotate-kek`: seals the VAPID private key under `to` in the rotation's
 * transaction. Returns whether it changed anything (false with no key, or one under `to` already).
 */
export async function resealVapidKey(tx: EntityManager, from: KeyEncryptionKey, to: KeyEncryptionKey): Promise<boolean> {
  const query = inTransaction(tx);
  const row = await selectVapidKey(query, true);
  if (!row || row.kek_id === to.id) return false;
  const plaintext = open(from, { ciphertext: row.private_key_ciphertext, iv: row.private_key_iv, tag: row.private_key_tag, kekId: row.kek_id }, sealLabel);
  try {
    const sealed = seal(to, plaintext, sealLabel);
    await updateVapidKeySeal(query, { private_key_ciphertext: sealed.ciphertext, private_key_iv: sealed.iv, private_key_tag: sealed.tag, kek_id: sealed.kekId });
    return true;
  } finally {
    plaintext.fill(0);
  }
}
