/**
 * `outpost keys rotate-kek`: where the old and the new key-encryption keys come from, and where the
 * new one goes when the old one was the file in DATA_DIR. Core re-seals the keys
 * (core/keys/kek-rotation.ts); this module only handles the keys' sources.
 */
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Logger } from "pino";
import { keyEncryptionKey, type KeyEncryptionKey } from "../core/keys/key-encryption.ts";
import { rotateKeyEncryptionKey, type KekRotation } from "../core/keys/kek-rotation.ts";
import { ConfigError, parseKeyEncryptionKey, type Config } from "./config.ts";
import { openRuntime } from "./runtime.ts";
import { assertNotServing } from "./database.ts";
import { keyEncryptionKeyFile } from "./key-encryption-key.ts";

export interface NewKeySource {
  /** --new-key-file */
  file?: string;
  /** NEW_KEY_ENCRYPTION_KEY */
  value?: string;
}

export interface KekRotationOutcome extends KekRotation {
  from: string;
  to: string;
  /** The DATA_DIR file now holding the new key, when the old one came from there. */
  replacedFile?: string;
}

/** The new KEK, from exactly one of the file and the variable. */
export function newKeyEncryptionKey(source: NewKeySource): KeyEncryptionKey {
  if (source.file && source.value) throw new ConfigError("give the new key once: --new-key-file or NEW_KEY_ENCRYPTION_KEY, not both");
  if (source.file) {
    let text: string;
    try {
      text = readFileSync(source.file, "utf8").trim();
    } catch (error) {
      throw new ConfigError(`cannot read --new-key-file ${source.file}: ${(error as NodeJS.ErrnoException).code ?? error}`);
    }
    return keyEncryptionKey(parseKeyEncryptionKey(text, `--new-key-file ${source.file}`));
  }
  if (source.value) return keyEncryptionKey(parseKeyEncryptionKey(source.value, "NEW_KEY_ENCRYPTION_KEY"));
  throw new ConfigError("the new key is missing: pass --new-key-file PATH or set NEW_KEY_ENCRYPTION_KEY (e.g. from `openssl rand -base64 32`)");
}

/** Writes the new key over DATA_DIR's key file: aside first, then renamed, so it is never half-written. */
function replaceKeyFile(path: string, kek: KeyEncryptionKey): void {
  const aside = `${path}.${process.pid}.tmp`;
  try {
    writeFileSync(aside, `${kek.key.toString("base64")}\n`, { mode: 0o600, flag: "wx" });
    renameSync(aside, path);
  } finally {
    rmSync(aside, { force: true });
  }
}

/**
 * Re-seals every signing key under the new KEK. The old one is KEY_ENCRYPTION_KEY, or the file in
 * DATA_DIR when that is unset (which then receives the new key, after the database has it).
 */
export async function rotateKek(config: Config, logger: Logger, source: NewKeySource): Promise<KekRotationOutcome> {
  // A serving process keeps the old KEK (and its bus and HMAC keys) in memory.
  assertNotServing(config, "rotate the key-encryption key while Outpost is stopped");
  const to = newKeyEncryptionKey(source);
  const file = config.keyEncryptionKey ? undefined : join(config.dataDir, keyEncryptionKeyFile);
  if (file && !existsSync(file)) {
    throw new ConfigError(`there is no key-encryption key to rotate from: KEY_ENCRYPTION_KEY is not set and ${file} does not exist`);
  }
  const runtime = await openRuntime(config, logger, "borrow");
  let rotation: KekRotation;
  let from: KeyEncryptionKey;
  try {
    from = runtime.keyEncryptionKey();
    rotation = await rotateKeyEncryptionKey(runtime.orm, from, to);
  } finally {
    await runtime.close();
  }
  const replace = file !== undefined && from.id !== to.id;
  if (replace) replaceKeyFile(file, to);
  return { ...rotation, from: from.id, to: to.id, replacedFile: replace ? file : undefined };
}
