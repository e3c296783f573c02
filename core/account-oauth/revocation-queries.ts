/**
 * The Account OAuth issuer's revocation and introspection (core/oauth/token-endpoints.ts): its
 * access tokens, looked up by hash at userinfo, so revoking one stops it there at once; and its
 * refresh tokens, where revoking one revokes its whole family (every access and refresh token of
 * the grant).
 */
import type { CoreConfig } from "../deps.ts";
import { sql, type SqlRunner } from "../db/sql.ts";
import { arrayOf, bool, row, text, timestamp } from "../db/rows.ts";
import type { RevocationProfile, TokenRecord } from "../oauth/token-endpoints.ts";
import { clientAuthentication } from "../oauth/exchange-checks.ts";
import { findRefreshToken, revokeFamily } from "./refresh-queries.ts";
import { accountClients } from "./account-oauth-queries.ts";

const accessRow = row({
  client_uuid: text,
  public_client_id: text,
  user_id: text,
  scopes: arrayOf(text),
  expires_at: timestamp,
  created_at: timestamp,
  usable: bool,
  authorization_code_id: text,
});

function findAccessToken(query: SqlRunner, tokenHash: string) {
  return query.one(
    sql`select t.oauth_provider_client_id as client_uuid, cl.client_id as public_client_id, t.user_id, t.scopes, t.expires_at, t.created_at,
               t.authorization_code_id,
               (t.revoked_at is null and c.reused_at is null and c.revoked_at is null and not cl.disabled) as usable
          from account_access_tokens t
          join account_authorization_codes c on c.id = t.authorization_code_id
          join oauth_provider_clients cl on cl.id = t.oauth_provider_client_id
         where t.token_hash = ${tokenHash}`,
    accessRow,
  );
}

const clientRow = row({ client_row_id: text, client_secret_hash: text, client_authenticated: bool, client_auth_method: text });

type AccountTokenRecord = TokenRecord & { familyId: string; clientName?: string };

export function accountRevocationProfile(config: Pick<CoreConfig, "accountIssuerUrl">): RevocationProfile {
  return {
    issuerUrl: config.accountIssuerUrl,
    findClient: (query, clientId, presented) =>
      query.one(
        sql`select cl.id as client_row_id, cl.secret_hash as client_secret_hash, ${clientAuthentication(presented)} as client_authenticated,
                   cl.auth_method as client_auth_method
              from ${accountClients} cl where cl.client_id = ${clientId}`,
        clientRow,
      ),
    async findToken(query, tokenHash): Promise<AccountTokenRecord | undefined> {
      const access = await findAccessToken(query, tokenHash);
      if (access) {
        return {
          kind: "access_token",
          clientUuid: access.client_uuid,
          publicClientId: access.public_client_id,
          sub: access.user_id,
          scopes: access.scopes,
          expiresAt: access.expires_at,
          createdAt: access.created_at,
          usable: access.usable,
          familyId: access.authorization_code_id,
        };
      }
      const refresh = await findRefreshToken(query, tokenHash);
      if (!refresh) return undefined;
      return {
        kind: "refresh_token",
        clientUuid: refresh.client_uuid,
        publicClientId: refresh.public_client_id,
        sub: refresh.user_id,
        scopes: refresh.scopes,
        expiresAt: refresh.expires_at,
        createdAt: refresh.created_at,
        usable: refresh.used_at === null && !refresh.family_revoked && !refresh.client_disabled,
        familyId: refresh.authorization_code_id,
        clientName: refresh.client_name,
      };
    },
    async revoke(query, record, tokenHash, now) {
      if (record.kind === "refresh_token") return revokeFamily(query, (record as AccountTokenRecord).familyId, now);
      return (await query.run(sql`update account_access_tokens set revoked_at = ${now} where token_hash = ${tokenHash} and revoked_at is null`)) > 0;
    },
    revoked: (record) => ({
      action: record.kind === "refresh_token" ? "account_oauth.refresh_token_revoked" : "account_oauth.access_token_revoked",
      targetType: "oauth_provider_client",
      targetId: record.publicClientId,
      details: { clientId: record.publicClientId, userId: record.sub },
    }),
  };
}
