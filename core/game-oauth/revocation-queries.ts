/**
 * The Game OAuth issuer's revocation and introspection (core/oauth/token-endpoints.ts): its
 * access tokens only (it issues no refresh tokens). They are looked up by hash at userinfo, so a
 * revoked one stops there at once.
 */
import type { CoreConfig } from "../deps.ts";
import type { RevocationProfile } from "../oauth/token-endpoints.ts";

interface AccessRow {
  client_uuid: string;
  public_client_id: string;
  organization_id: string;
  sub: string;
  expires_at: Date;
  created_at: Date;
  usable: boolean;
}

export function gameRevocationProfile(config: Pick<CoreConfig, "gameIssuerUrl">): RevocationProfile {
  return {
    issuerUrl: config.gameIssuerUrl,
    async findClient(query, clientId) {
      const [row] = await query<{ client_row_id: string; client_secret_hash: string; client_disabled: boolean }>(
        `select id as client_row_id, secret_hash as client_secret_hash, disabled as client_disabled from game_oauth_clients where client_id = ?`,
        [clientId],
      );
      return row;
    },
    async findToken(query, tokenHash) {
      const [row] = await query<AccessRow>(
        `select t.game_oauth_client_id as client_uuid, cl.client_id as public_client_id, t.organization_id, a.sub, t.expires_at, t.created_at,
                (t.revoked_at is null and c.reused_at is null) as usable
           from access_tokens t
           join authorization_codes c on c.id = t.authorization_code_id
           join game_accounts a on a.id = t.game_account_id
           join game_oauth_clients cl on cl.id = t.game_oauth_client_id
          where t.token_hash = ?`,
        [tokenHash],
      );
      if (!row) return undefined;
      return {
        kind: "access_token", clientUuid: row.client_uuid, publicClientId: row.public_client_id, sub: row.sub, scopes: ["openid", "profile"],
        expiresAt: new Date(row.expires_at), createdAt: new Date(row.created_at), usable: row.usable, organizationId: row.organization_id,
      };
    },
    async revoke(query, _record, tokenHash, now) {
      const rows = await query(`update access_tokens set revoked_at = ? where token_hash = ? and revoked_at is null returning id`, [now, tokenHash]);
      return rows.length > 0;
    },
    revoked: (record) => ({
      action: "game_oauth.access_token_revoked",
      targetType: "game_oauth_client",
      targetId: record.publicClientId,
      organizationId: (record as { organizationId?: string }).organizationId ?? null,
      details: { clientId: record.publicClientId, sub: record.sub },
    }),
  };
}
