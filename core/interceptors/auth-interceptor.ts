import type { Interceptor, StreamRequest, UnaryRequest } from "@connectrpc/connect";
import { agentKeyHeader, apiKeyHeader, clientIpHeader, sessionHeader } from "../../contract/credentials.ts";
import { hashSecret, looksLike } from "../../contract/secrets.ts";
import { isUuid } from "../../contract/uuid.ts";
import { Audience, organizationScoped, serverScoped, serviceAudience } from "../../contract/services.ts";
import { agentCallerKey, callerKey, serverScopeKey, type AgentCaller } from "../context.ts";
import { credentialRefusal, presentedCredential, type CredentialStore } from "../auth/credential-store.ts";
import { fail } from "../errors.ts";
import { clientIpKey } from "../ratelimit/client-ip.ts";
import type { CredentialGuard } from "../ratelimit/credential-guard.ts";

/**
 * Resolves the caller of every procedure from the one credential its service's audience takes,
 * and refuses the call without it: for user-facing services a session token or a user API key
 * (each in its own header), for agent services a server's agent key alone. Services for the edge
 * alone take no credential here. An organization API key opens only the procedures of its
 * organization (contract/services.ts organizationScoped); core/access.ts keeps it inside that
 * organization. Runs once per call, so once when a stream opens. It says who calls (the caller,
 * and for a call about one server the {@link ServerScope} read with the credential) and nothing
 * of what they may do: each procedure asks core/access.ts.
 */
export function createAuthInterceptor(credentials: CredentialStore, guard: CredentialGuard): Interceptor {
  return (next) => async (req) => {
    const audience = serviceAudience(req.service);
    if (audience !== Audience.USER && audience !== Audience.AGENT) return next(req);
    const ip = clientIpKey(req.header.get(clientIpHeader));
    if (audience === Audience.AGENT) {
      req.contextValues.set(agentCallerKey, await authenticateAgent(credentials, req.header, guard, ip));
      return next(req);
    }
    const presented = presentedCredential(req.header);
    const { session, apiKey } = presented;
    if (session && apiKey) throw fail("ambiguous_credential", "send one credential: a session or an API key, not both");
    if (!session && !apiKey) throw fail("unauthenticated", "sign in or send an API key in the X-API-Key header");
    const found = await credentials.user(presented, serverOfCall(req));
    if (!found) {
      await guard.failed(ip);
      throw fail("unauthenticated", credentialRefusal(presented));
    }
    guard.resolved(hashSecret((session || apiKey)!));
    const confinedTo = found.caller.credential.organization;
    if (confinedTo && !organizationScoped(req.method)) {
      throw fail("permission_denied", `an organization API key can only be used for ${confinedTo.slug}'s resources`);
    }
    req.contextValues.set(callerKey, found.caller);
    if (found.scope) req.contextValues.set(serverScopeKey, found.scope);
    return next(req);
  };
}

/** A server-scoped call's server id, when it is one (the validate interceptor, after this one, refuses any other). */
function serverOfCall(req: UnaryRequest | StreamRequest): string | undefined {
  if (req.stream || !serverScoped(req.method)) return undefined;
  const serverId = (req.message as { serverId?: unknown }).serverId;
  return typeof serverId === "string" && isUuid(serverId) ? serverId : undefined;
}

/** An agent key and nothing else: a user's credential never opens an agent service. */
async function authenticateAgent(credentials: CredentialStore, header: Headers, guard: CredentialGuard, ip: string | undefined): Promise<AgentCaller> {
  if (header.get(sessionHeader) || header.get(apiKeyHeader)) {
    throw fail("unauthenticated", `agent services accept only a server's agent key (${agentKeyHeader}), not a session or an API key`);
  }
  const key = header.get(agentKeyHeader);
  if (!key) throw fail("unauthenticated", `send the server's agent key (opa_…) in the ${agentKeyHeader} header`);
  if (looksLike("apiKey", key)) throw fail("unauthenticated", "that is a user API key (opk_…); an agent needs its server's agent key (opa_…)");
  const agent = await credentials.agent(key);
  if (!agent) {
    await guard.failed(ip);
    throw fail("unauthenticated", "the agent key is not valid: it was regenerated, its server was deleted, or it was mistyped");
  }
  guard.resolved(agent.keyHash);
  return agent;
}
