import type { EntityManager } from "@mikro-orm/postgresql";
import { ApiKey, type User } from "../db/entities.ts";
import { issueSecret } from "../../contract/secrets.ts";

/** Adds a new key to the unit of work; the secret is returned once and only its hash is kept. */
export function createApiKey(em: EntityManager, user: User | string, name: string, expiresAt: Date | null) {
  const secret = issueSecret("apiKey");
  const apiKey = em.create(ApiKey, {
    user,
    name,
    prefix: secret.displayPrefix,
    secretHash: secret.hash,
    expiresAt,
  });
  return { apiKey, key: secret.value };
}
