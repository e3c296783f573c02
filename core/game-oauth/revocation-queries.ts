/**
 * The Game OAuth issuer's revocation and introspection (core/oauth/token-endpoints.ts): its
 * access tokens only (it issues no refresh tokens). They are looked up by hash at userinfo, so a
 * revoked one stops there at once.
 */
import type { CoreConfig } from "../deps.ts";
import type { RevocationProfile } from "../oauth/token-endpoints.ts";
import { sql } from "../db/sql.ts";
import { bool, row, text, timestamp } from "../db/rows.ts";
import { clientAuthentication } from "../oauth/exchange-checks.ts";
import { gameClients } from "./game-oauth-queries.ts";

const clientRow = row({ client_row_id: text, client_secret_hash: text, client_authenticated: bool, client_auth_method: text });

const accessRow = row({
  client_uuid: text,
  public_client_id: text,
  organization_id: text,
  sub: text,
  expires_at: timestamp,
  created_at: timestamp,
  usable: bool,
});

export function gameRevocationProfile(config: Pick<CoreConfig, "gameIssuerUrl">): RevocationProfile {
  return {
    issuerUrl: config.gameIssuerUrl,
    findClient: (query, clientId, presented) =>
      query.one(
        sql`select cl.id as client_row_id, cl.secret_hash as client_secret_hash, ${clientAuthentication(presented)} as client_authenticated,
                   cl.auth_method as client_auth_method
              from ${gameClients} cl where cl.client_id = ${clientId}`,
        clientRow,
      ),
    async findToken(query, tokenHash) {
      const found = await query.one(
        sql`select t.game_oauth_client_id as client_uuid, cl.client_id as public_client_id, t.organization_id, a.sub, t.expires_at, t.created_at,
                   (t.revoked_at is null and c.reused_at is null) as usable
              from access_tokens t
              join authorization_codes c on c.id = t.authorization_code_id
              join game_accounts a on a.id = t.game_account_id
              join game_oauth_clients cl on cl.id = t.game_oauth_client_id
             where t.token_hash = ${tokenHash}`,
        accessRow,
      );
      if (!found) return undefined;
      return {
        kind: "access_token",
        clientUuid: found.client_uuid,
        publicClientId: found.public_client_id,
        sub: found.sub,
        scopes: ["openid", "profile"],
        expiresAt: found.expires_at,
        createdAt: found.created_at,
        usable: found.usable,
        organizationId: found.organization_id,
      };
    },
    async revoke(query, _record, tokenHash, now) {
      return (await query.run(sql`update access_tokens set revoked_at = ${now} where token_hash = ${tokenHash} and revoked_at is null`)) > 0;
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
