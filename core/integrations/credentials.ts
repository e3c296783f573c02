/**
 * An integration's credentials at rest: JSON sealed under the key-encryption key with the same
 * AES-256-GCM as the signing keys (core/keys/key-encryption.ts), bound to the row's id so a
 * ciphertext copied to another row does not open. Discord's webhook URL carries its token in its
 * path; a webhook's secret signs every delivery: both are credentials, so neither is stored plain.
 */
import { open, seal, type KeyEncryptionKey } from "../keys/key-encryption.ts";
import type { Integration } from "../db/integration-entities.ts";

export interface IntegrationCredentials {
  /** Discord and webhook: where to send. */
  url?: string;
  /** Webhook: the Standard Webhooks signing secret (`whsec_…`). */
  secret?: string;
}

const label = (integrationId: string) => `integration:${integrationId}`;

/** The sealed columns of `credentials` for the row `integrationId`. */
export function sealCredentials(kek: KeyEncryptionKey, integrationId: string, credentials: IntegrationCredentials) {
  const sealed = seal(kek, Buffer.from(JSON.stringify(credentials)), label(integrationId));
  return { sealedCiphertext: sealed.ciphertext, sealedIv: sealed.iv, sealedTag: sealed.tag, kekId: sealed.kekId };
}

/** Replaces the row's sealed credentials. */
export function setCredentials(kek: KeyEncryptionKey, row: Integration, credentials: IntegrationCredentials): void {
  Object.assign(row, sealCredentials(kek, row.id, credentials));
}

export function openCredentials(kek: KeyEncryptionKey, row: Integration): IntegrationCredentials {
  const plain = open(kek, { ciphertext: row.sealedCiphertext, iv: row.sealedIv, tag: row.sealedTag, kekId: row.kekId }, label(row.id), "integration");
  return JSON.parse(plain.toString("utf8")) as IntegrationCredentials;
}

/**
 * Seals the row's credentials under `to` instead of `from` (a KEK rotation); false when they are
 * under `to` already. Credentials under any other KEK stop the rotation (opening them throws).
 */
export function resealCredentials(row: Integration, from: KeyEncryptionKey, to: KeyEncryptionKey): boolean {
  if (row.kekId === to.id) return false;
  setCredentials(to, row, openCredentials(from, row));
  return true;
}
