import { hash, verify } from "@node-rs/argon2";

/** Argon2id (the package exports its algorithm ids as a const enum, which type stripping cannot read). */
const argon2id = 2;

/** Argon2id with OWASP's recommended minimum (19 MiB, 2 passes, 1 lane). */
const options = { algorithm: argon2id, memoryCost: 19456, timeCost: 2, parallelism: 1 } as const;

export function hashPassword(password: string): Promise<string> {
  return hash(password, options);
}

/** A real hash of a random password, checked when the account does not exist so that a wrong
 * email costs the same time as a wrong password. */
const decoy = hash(crypto.randomUUID(), options);

export async function verifyPassword(passwordHash: string | undefined, password: string): Promise<boolean> {
  try {
    return await verify(passwordHash ?? (await decoy), password);
  } catch {
    return false;
  }
}
