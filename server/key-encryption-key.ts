/**
 * The key-encryption key (KEK) of the signing keys: KEY_ENCRYPTION_KEY when set, otherwise a key
 * generated into DATA_DIR on first need and read from there afterwards. There is no built-in
 * fallback: a key nobody generated would be a key everybody knows.
 */
import { linkSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import type { Logger } from "pino";
import { keyEncryptionKey, keyEncryptionKeyBytes, type KeyEncryptionKey } from "../core/keys/key-encryption.ts";
import { ConfigError, type Config } from "./config.ts";

export const keyEncryptionKeyFile = "key-encryption-key";

function readKeyFile(path: string): Buffer | undefined {
  let text: string;
  try {
    text = readFileSync(path, "utf8").trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  const key = Buffer.from(text, "base64");
  if (!/^[A-Za-z0-9+/]{43}=$/.test(text) || key.length !== keyEncryptionKeyBytes) {
    throw new ConfigError(`${path} must hold ${keyEncryptionKeyBytes} bytes in base64; restore it, or set KEY_ENCRYPTION_KEY`);
  }
  return key;
}

/** Creates the file unless another process got there first (write aside, then link: never half-written). */
function createKeyFile(path: string): boolean {
  const aside = `${path}.${process.pid}.tmp`;
  writeFileSync(aside, `${randomBytes(keyEncryptionKeyBytes).toString("base64")}\n`, { mode: 0o600, flag: "wx" });
  try {
    linkSync(aside, path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw error;
  } finally {
    rmSync(aside, { force: true });
  }
}

/** The KEK for this process. Logs where it came from when it is a file. */
export function resolveKeyEncryptionKey(config: Pick<Config, "keyEncryptionKey" | "dataDir" | "databaseUrl">, logger: Logger): KeyEncryptionKey {
  if (config.keyEncryptionKey) return keyEncryptionKey(config.keyEncryptionKey);
  const path = join(config.dataDir, keyEncryptionKeyFile);
  let generated = false;
  let key = readKeyFile(path);
  if (!key) {
    mkdirSync(config.dataDir, { recursive: true });
    generated = createKeyFile(path);
    key = readKeyFile(path)!;
  }
  const kek = keyEncryptionKey(key);
  if (generated) logger.info({ path, kekId: kek.id }, "generated a key-encryption key for the signing keys (KEY_ENCRYPTION_KEY is not set)");
  if (statSync(path).mode & 0o077) logger.warn({ path }, "the key-encryption key file is readable by other users; chmod 600 it");
  if (generated || config.databaseUrl) {
    logger.warn(
      { path },
      "the signing keys are encrypted with a key-encryption key kept in DATA_DIR; deployments with several instances must set KEY_ENCRYPTION_KEY, as they would not share this file",
    );
  }
  return kek;
}
