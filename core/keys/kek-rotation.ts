/**
 * Rotating KEY_ENCRYPTION_KEY: every private key sealed under the old KEK is opened and sealed
 * again under the new one, in one transaction that holds both issuers' signing-key locks (so no
 * rotation interleaves), with one activity event. The signing keys and the Web Push VAPID key
 * (core/pwa/vapid-keys.ts, its row locked too) are the only values sealed under the KEK; what is derived from it (login-code and known-device HMACs, the bus's and the
 * hosted page's HMAC keys) is not stored, so it simply follows the KEK the instances start with.
 * Integrations' credentials (webhook secrets, Discord URLs) are sealed too, and re-sealed in the
 * same transaction, their rows locked.
 */
import type { EntityManager } from "@mikro-orm/postgresql";
import { issuers, SigningKey } from "../db/signing-key-entities.ts";
import { recordActivity } from "../activity/record.ts";
import { KeyEncryptionError, open, seal, type KeyEncryptionKey } from "./key-encryption.ts";
import { lockIssuer, sealLabel } from "./signing-key-store.ts";
import type { Orm } from "../db/orm.ts";
import { LockMode } from "@mikro-orm/core";
import { Integration } from "../db/integration-entities.ts";
import { resealCredentials } from "../integrations/credentials.ts";
import { resealVapidKey } from "../pwa/vapid-keys.ts";

export interface KekRotation {
  /** Keys (and integrations' credentials) sealed again under the new KEK by this run. */
  resealed: number;
  /** Keys that were under the new KEK already (a run that was interrupted, or repeated). */
  alreadyNew: number;
}

/** Re-seals one row under `to`; false when it is under `to` already. */
function reseal(row: SigningKey, from: KeyEncryptionKey, to: KeyEncryptionKey): boolean {
  if (row.kekId === to.id) return false;
  if (row.kekId !== from.id) {
    throw new KeyEncryptionError(
      `signing key ${sealLabel(row.issuer, row.kid)} is encrypted with key-encryption key ${row.kekId}, ` +
        `which is neither the current one (${from.id}) nor the new one (${to.id}); nothing was changed`,
    );
  }
  const label = sealLabel(row.issuer, row.kid);
  const plaintext = open(from, { ciphertext: row.privateKeyCiphertext, iv: row.privateKeyIv, tag: row.privateKeyTag, kekId: row.kekId }, label);
  try {
    const sealed = seal(to, plaintext, label);
    row.privateKeyCiphertext = sealed.ciphertext;
    row.privateKeyIv = sealed.iv;
    row.privateKeyTag = sealed.tag;
    row.kekId = sealed.kekId;
    return true;
  } finally {
    plaintext.fill(0);
  }
}

/**
 * Seals every signing key under `to` instead of `from`, all or nothing. Safe to run again (also
 * with `to` as `from`): keys already under `to` are left as they are, a key under any other KEK
 * stops the whole run, and a run that changes nothing records no event.
 */
export async function rotateKeyEncryptionKey(orm: Orm, from: KeyEncryptionKey, to: KeyEncryptionKey): Promise<KekRotation> {
  return orm.em.fork().transactional(async (tx: EntityManager) => {
    for (const issuer of issuers) await lockIssuer(tx, issuer);
    const rows = await tx.find(SigningKey, {}, { orderBy: { issuer: "asc", kid: "asc" } });
    const integrations = await tx.find(Integration, {}, { orderBy: { id: "asc" }, lockMode: LockMode.PESSIMISTIC_WRITE });
    const resealedRows = rows.filter((row) => reseal(row, from, to)).length + integrations.filter((row) => resealCredentials(row, from, to)).length;
    const resealedVapid = await resealVapidKey(tx, from, to);
    const resealed = resealedRows + (resealedVapid ? 1 : 0);
    if (resealed > 0) {
      recordActivity(tx, "system", {
        action: "key_encryption_key.rotated",
        targetType: "key_encryption_key",
        targetId: to.id,
        details: { from: from.id, to: to.id, resealed: String(resealed) },
      });
    }
    await tx.flush();
    return { resealed, alreadyNew: rows.length + integrations.length - resealedRows };
  });
}
