import type { EntityManager } from "@mikro-orm/postgresql";
import { timestampDate, type Timestamp } from "@bufbuild/protobuf/wkt";
import { ApiKey, type Organization, type User } from "../db/entities.ts";
import { issueSecret } from "../../contract/secrets.ts";
import type { Clock } from "../deps.ts";

const dayMs = 86_400_000;

/** A key request's expiry (validation has checked it): in so many days, at a date, or never (null). */
export type ApiKeyExpiry = { case: "expiresInDays"; value: number } | { case: "expiresAt"; value: Timestamp } | { case: undefined; value?: undefined };

export function apiKeyExpiresAt(expiry: ApiKeyExpiry, clock: Clock): Date | null {
  if (expiry.case === "expiresInDays") return new Date(clock.now().getTime() + expiry.value * dayMs);
  if (expiry.case === "expiresAt") return timestampDate(expiry.value);
  return null;
}

/**
 * Adds a new key to the unit of work; the secret is returned once and only its hash is kept. With
 * an organization, the key is confined to it (an organization API key).
 */
export function createApiKey(em: EntityManager, user: User | string, name: string, expiresAt: Date | null, organization?: Organization) {
  const secret = issueSecret("apiKey");
  const apiKey = em.create(ApiKey, {
    user,
    name,
    prefix: secret.displayPrefix,
    secretHash: secret.hash,
    expiresAt,
    organization: organization ?? null,
  });
  return { apiKey, key: secret.value };
}
