/**
 * The Game OAuth issuer's configuration of the token engine (core/oauth/token-engine.ts): its
 * tables (game_oauth_clients, authorization_codes, access_tokens), its keys and its claims —
 * the game account a sign-in proved.
 */
import type { CoreConfig } from "../deps.ts";
import type { ConsumedCode, TokenProfile } from "../oauth/token-engine.ts";

export interface GameClaims {
  sub: string;
  preferredUsername: string;
  game: string;
  gameAccountName: string;
  gameAccountId: string;
  organizationId: string;
  verifiedByServerId: string;
}

interface GameCodeRow extends ConsumedCode {
  organization_id: string;
  server_id: string;
  game_account_id: string;
  sub: string;
  name: string;
  game: string;
  account_uuid: string;
}

type ClaimColumns = Pick<GameCodeRow, "sub" | "name" | "game" | "account_uuid" | "organization_id" | "server_id">;

function claimsOf(row: ClaimColumns): GameClaims {
  return {
    sub: row.sub,
    preferredUsername: row.name,
    game: row.game,
    gameAccountName: row.name,
    gameAccountId: row.account_uuid,
    organizationId: row.organization_id,
    verifiedByServerId: row.server_id,
  };
}

export function gameTokenProfile(config: Pick<CoreConfig, "gameIssuerUrl">): TokenProfile<GameCodeRow, GameClaims> {
  return {
    keys: "game",
    issuerUrl: config.gameIssuerUrl,
    accessToken: "gameAccessToken",
    tables: {
      clients: "game_oauth_clients",
      codes: "authorization_codes",
      codeClientColumn: "game_oauth_client_id",
      codeColumns: "organization_id, server_id, game_account_id",
      claimsJoin: "join game_accounts a on a.id = c.game_account_id",
      tokens: "access_tokens",
      tokenColumns: "organization_id, game_account_id, server_id",
      claimsColumns: "a.sub, a.name, a.game, a.account_uuid",
    },
    claims: claimsOf,
    jwtClaims: (claims) => ({
      sub: claims.sub,
      preferred_username: claims.preferredUsername,
      game: claims.game,
      game_account_name: claims.gameAccountName,
      game_account_id: claims.gameAccountId,
      organization_id: claims.organizationId,
      verified_by_server_id: claims.verifiedByServerId,
    }),
    scope: () => "openid profile",
    codeReused: (row, presentedBy) => ({
      organizationId: row.organization_id,
      action: "game_oauth.code_reused",
      targetType: "game_oauth_client",
      targetId: row.public_client_id,
      serverId: row.server_id,
      details: { clientId: row.public_client_id, clientName: row.client_name, presentedBy },
    }),
    userInfoSql: `select a.sub, a.name, a.game, a.account_uuid, t.organization_id, t.server_id
       from access_tokens t
       join game_accounts a on a.id = t.game_account_id
       join authorization_codes c on c.id = t.authorization_code_id
      where t.token_hash = ? and t.revoked_at is null and c.reused_at is null and t.expires_at > ?`,
    userInfoClaims: (row) => claimsOf(row as unknown as ClaimColumns),
  };
}
