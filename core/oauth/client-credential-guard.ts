/**
 * A token endpoint's client authentication counted like any other credential: a request whose
 * client authentication fails (invalid_client) counts against its address's `bad_credential_ip`
 * limit, the same bucket as unknown sessions, API keys and agent keys, so a flood guessing client
 * secrets from one address is refused (429) after 60 in 10 minutes instead of costing a database
 * round trip each. A client this process has lately seen authenticate (its id and secret) keeps
 * working from a refused address, as a known session does (core/ratelimit/credential-guard.ts).
 */
import type { HandlerContext } from "@connectrpc/connect";
import { clientIpHeader } from "../../contract/credentials.ts";
import { hashSecret } from "../../contract/secrets.ts";
import type { CoreDeps } from "../deps.ts";
import { recordLockout } from "../activity/lockouts.ts";
import { CredentialGuard } from "../ratelimit/credential-guard.ts";
import { clientIpKey } from "../ratelimit/client-ip.ts";
import { oauthFailureOf } from "./oauth-failure.ts";

type Deps = Parameters<typeof recordLockout>[0] & Pick<CoreDeps, "rateLimits">;

export interface ClientCredentialGuard {
  /**
   * Runs `exchange` for the request's client unless its address is refused (rate_limited), and
   * counts its outcome: an invalid_client refusal against the address (rate_limited past the limit).
   */
  <T>(ctx: HandlerContext, client: { clientId: string; clientSecret: string }, exchange: () => Promise<T>): Promise<T>;
}

export function createClientCredentialGuard(deps: Deps): ClientCredentialGuard {
  const guard = new CredentialGuard(deps.rateLimits.badCredentialPerIp, (lockout) => recordLockout(deps, lockout));
  return async (ctx, client, exchange) => {
    const ip = clientIpKey(ctx.requestHeader.get(clientIpHeader));
    const credentialHash = hashSecret(`client:${client.clientId}:${client.clientSecret}`);
    guard.screen(ip, credentialHash);
    try {
      const result = await exchange();
      guard.resolved(credentialHash);
      return result;
    } catch (error) {
      // Any other OAuth refusal (a bad code, a bad refresh token) came after the client authenticated.
      const refused = oauthFailureOf(error);
      if (refused?.error === "invalid_client") await guard.failed(ip);
      else if (refused) guard.resolved(credentialHash);
      throw error;
    }
  };
}
