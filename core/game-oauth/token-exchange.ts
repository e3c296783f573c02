/**
 * The Game OAuth issuer's configuration of the token engine (core/oauth/token-engine.ts): its
 * statements (game-oauth-queries.ts), its keys and its claims — the game account a sign-in proved.
 */
import type { CoreConfig } from "../deps.ts";
import type { TokenProfile } from "../oauth/token-engine.ts";
import { gameTokenQueries, type GameCodeRow, type GameReusedRow, type GameUserInfoRow } from "./game-oauth-queries.ts";

export interface GameClaims {
  sub: string;
  preferredUsername: string;
  game: string;
  gameAccountName: string;
  gameAccountId: string;
  organizationId: string;
  verifiedByServerId: string;
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

export function gameTokenProfile(config: Pick<CoreConfig, "gameIssuerUrl">): TokenProfile<GameCodeRow, GameReusedRow, GameUserInfoRow, GameClaims> {
  return {
    keys: "game",
    issuerUrl: config.gameIssuerUrl,
    accessToken: "gameAccessToken",
    queries: gameTokenQueries,
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
    userInfoClaims: claimsOf,
  };
}
