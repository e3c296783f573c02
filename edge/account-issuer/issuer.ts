/**
 * The Account OAuth issuer on ACCOUNT_BASE_URL, issuer identifier ACCOUNT_BASE_URL/api/auth: the
 * three discovery documents, the JWKS, authorize with its sign-in and consent steps, token,
 * userinfo, revocation and introspection. Mounted in the account edge (edge/app.ts); AccountOAuthService (core) decides
 * everything. Token, userinfo, discovery and JWKS are the same modules as Game OAuth's
 * (edge/oauth/), with this issuer's paths, scopes and claims.
 */
import type { Context, Middleware } from "koa";
import type { Transport } from "@connectrpc/connect";
import { AccountOAuthService } from "../../gen/outpost/accountoauth/v1/account_oauth_service_pb.js";
import { Issuer, KeysService } from "../../gen/outpost/keys/v1/keys_service_pb.js";
import { accountIssuerPath, accountIssuerUrl } from "../../contract/issuers.ts";
import { createCoreCalls } from "../core-calls.ts";
import { createDiscoveryHandler, createJwksHandler, discoveryDocument } from "../oauth/discovery.ts";
import { oauthErrorHandler } from "../oauth/oauth-errors.ts";
import { routes } from "../oauth/routes.ts";
import { createTokenHandler } from "../oauth/token.ts";
import { createUserInfoHandler } from "../oauth/userinfo.ts";
import { createIntrospectionHandler, createRevocationHandler } from "../oauth/revocation.ts";
import { createAuthorizationPages } from "./authorization.ts";

export interface AccountIssuerOptions {
  accountBaseUrl: URL;
  /** Reaches core's AccountOAuthService and KeysService. */
  transport: Transport;
  secureCookies: boolean;
}

export const accountIssuerPaths = {
  discovery: `${accountIssuerPath}/.well-known/openid-configuration`,
  /** Where OpenID Connect Discovery looks when the issuer is taken for the origin. */
  rootDiscovery: "/.well-known/openid-configuration",
  /** RFC 8414 §3: the well-known segment goes before the issuer's path. */
  authorizationServer: `/.well-known/oauth-authorization-server${accountIssuerPath}`,
  jwks: `${accountIssuerPath}/jwks`,
  authorize: `${accountIssuerPath}/oauth2/authorize`,
  /** Back from the sign-in page (or to show the consent page again). */
  continue: `${accountIssuerPath}/oauth2/continue`,
  consent: `${accountIssuerPath}/oauth2/consent`,
  token: `${accountIssuerPath}/oauth2/token`,
  userinfo: `${accountIssuerPath}/oauth2/userinfo`,
  revocation: `${accountIssuerPath}/oauth2/revoke`,
  introspection: `${accountIssuerPath}/oauth2/introspect`,
  endSession: `${accountIssuerPath}/oauth2/end-session`,
} as const;

export function createAccountIssuer(options: AccountIssuerOptions): Middleware {
  const issuer = accountIssuerUrl(options.accountBaseUrl);
  const origin = options.accountBaseUrl.origin;
  const calls = createCoreCalls({ transport: options.transport, secureCookies: options.secureCookies });
  const core = (ctx: Context) => calls.client(ctx, AccountOAuthService);
  const document = discoveryDocument({
    issuer,
    endpoints: {
      authorization: origin + accountIssuerPaths.authorize,
      token: origin + accountIssuerPaths.token,
      userinfo: origin + accountIssuerPaths.userinfo,
      jwks: origin + accountIssuerPaths.jwks,
      revocation: origin + accountIssuerPaths.revocation,
      introspection: origin + accountIssuerPaths.introspection,
      endSession: origin + accountIssuerPaths.endSession,
    },
    scopes: ["openid", "profile", "email", "offline_access"],
    grantTypes: ["authorization_code", "refresh_token"],
    authMethods: ["client_secret_basic", "client_secret_post", "none"],
    claims: ["name", "email", "email_verified"],
  });
  const pages = createAuthorizationPages({ calls, secureCookies: options.secureCookies, continuePath: accountIssuerPaths.continue });

  const userinfo = createUserInfoHandler(async (accessToken, ctx) => {
    const c = (await core(ctx).getUserInfo({ accessToken })).claims;
    if (!c) throw new Error("core answered userinfo without claims");
    return {
      sub: c.sub,
      ...(c.name !== undefined && { name: c.name }),
      ...(c.email !== undefined && { email: c.email }),
      ...(c.emailVerified !== undefined && { email_verified: c.emailVerified }),
    };
  });
  const discovery = createDiscoveryHandler(document);

  const oauthErrors = oauthErrorHandler(issuer);
  const oauthErrorPaths = new Set<string>([accountIssuerPaths.token, accountIssuerPaths.userinfo, accountIssuerPaths.revocation, accountIssuerPaths.introspection]);
  const table = routes({
    [accountIssuerPaths.discovery]: { GET: discovery },
    [accountIssuerPaths.rootDiscovery]: { GET: discovery },
    [accountIssuerPaths.authorizationServer]: { GET: discovery },
    [accountIssuerPaths.jwks]: { GET: createJwksHandler((ctx) => calls.client(ctx, KeysService), Issuer.ACCOUNT) },
    [accountIssuerPaths.authorize]: { GET: pages.authorize },
    [accountIssuerPaths.continue]: { GET: pages.continueAuthorization },
    [accountIssuerPaths.consent]: { POST: pages.consent },
    [accountIssuerPaths.endSession]: { GET: pages.endSession, POST: pages.endSession },
    [accountIssuerPaths.token]: { POST: createTokenHandler((request, ctx) => core(ctx).exchangeCode(request)) },
    [accountIssuerPaths.userinfo]: { GET: userinfo, POST: userinfo },
    [accountIssuerPaths.revocation]: { POST: createRevocationHandler((request, ctx) => core(ctx).revokeToken(request)) },
    [accountIssuerPaths.introspection]: { POST: createIntrospectionHandler((request, ctx) => core(ctx).introspectToken(request)) },
  });
  // Token and userinfo answer RFC 6749 / 6750 errors; the pages answer pages.
  return (ctx, next) => (oauthErrorPaths.has(ctx.path) ? oauthErrors(ctx, () => table(ctx, next)) : table(ctx, next));
}
