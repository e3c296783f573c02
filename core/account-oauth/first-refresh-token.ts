/**
 * The first refresh token of an Account OAuth grant, issued by a good code exchange when the grant
 * includes offline_access (core/account-oauth/tokens.ts). Its rotations are refresh-tokens.ts's.
 */
import { randomUUID } from "node:crypto";
import { issueSecret } from "../../contract/secrets.ts";
import type { SqlRunner } from "../db/sql.ts";
import { insertFirstRefreshToken } from "./refresh-queries.ts";

/** How long a refresh token works from its issue (each rotation issues a new one). */
export const refreshTokenTtlMs = 30 * 24 * 60 * 60_000;

/** The first refresh token of a code's grant (after a good exchange), or undefined when the grant has none. */
export async function firstRefreshToken(query: SqlRunner, codeId: string, now: Date): Promise<string | undefined> {
  const token = issueSecret("accountRefreshToken");
  const expiresAt = new Date(now.getTime() + refreshTokenTtlMs);
  return (await insertFirstRefreshToken(query, { id: randomUUID(), tokenHash: token.hash, codeId, expiresAt, now })) ? token.value : undefined;
}
