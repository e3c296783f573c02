/**
 * OpenID Connect RP-Initiated Logout 1.0 for the Account OAuth issuer (GET or POST
 * …/oauth2/end-session). The app sends the browser with the user's ID token as `id_token_hint`:
 * its signature (this issuer's keys, any of them in the JWKS) and issuer are checked; it may have
 * expired (§2: the hint only names who and which app). The browser's dashboard session ends only
 * when the hint names its user, so no other site can sign a user out unasked; without a hint the
 * user is asked on a page whose form sends the same parameters back, confirmed, so the way back to
 * the app and its `state` survive the question. `post_logout_redirect_uri` must equal one the app registered (after the same
 * normalization as redirect URIs), or nothing is redirected.
 */
import { compactVerify, createLocalJWKSet } from "jose";
import type { EntityManager } from "@mikro-orm/postgresql";
import type { CoreDeps } from "../deps.ts";
import { Session } from "../db/entities.ts";
import { findSession } from "../auth/auth-queries.ts";
import { hashSecret, looksLike } from "../../contract/secrets.ts";
import { recordActivity } from "../activity/record.ts";
import { appendQuery } from "../oauth/authorization-request.ts";
import { redirectUriMatches } from "../oauth/redirect-uris.ts";
import { findLogoutClient } from "./account-oauth-queries.ts";
import { signingAlgs } from "../../contract/issuers.ts";

type Deps = Pick<CoreDeps, "signingKeys" | "statements" | "config">;

export interface EndSessionInput {
  idTokenHint: string;
  clientId: string;
  postLogoutRedirectUri: string;
  state: string;
  /** The user confirmed on Outpost's own page (the edge checked its form token). */
  confirmed: boolean;
  sessionToken: string;
}

export type EndSessionOutcome = (
  | { case: "pageError"; value: { error: string; description: string } }
  | { case: "redirectUrl"; value: string }
  | { case: "signedOut"; value: true }
  | { case: "confirm"; value: true }
) & { sessionEnded?: boolean };

const pageError = (description: string): EndSessionOutcome => ({ case: "pageError", value: { error: "invalid_request", description } });

/** The user and app an ID token of this issuer names, or null for anything else. Expiry is not checked. */
async function verifyHint(deps: Deps, hint: string): Promise<{ sub: string; aud: string } | null> {
  try {
    const { payload } = await compactVerify(hint, createLocalJWKSet(await deps.signingKeys.jwks("account")), { algorithms: [...signingAlgs] });
    const claims = JSON.parse(new TextDecoder().decode(payload)) as Record<string, unknown>;
    if (claims.iss !== deps.config.accountIssuerUrl || typeof claims.sub !== "string" || typeof claims.aud !== "string") return null;
    return { sub: claims.sub, aud: claims.aud };
  } catch {
    return null;
  }
}

/** Where to send the browser after logout: the registered URI with state, or null when none was asked. */
async function returnUrl(deps: Deps, em: EntityManager, input: EndSessionInput, clientId: string): Promise<string | null | EndSessionOutcome> {
  if (!input.postLogoutRedirectUri) return null;
  if (!clientId) return pageError("post_logout_redirect_uri needs an id_token_hint or a client_id");
  const client = await findLogoutClient(deps.statements.on(em), clientId);
  if (!client || !redirectUriMatches(client.post_logout_redirect_uris, input.postLogoutRedirectUri)) {
    return pageError("post_logout_redirect_uri is not one this app registered");
  }
  // A disabled app starts no sign-ins, and gets no one sent back to it either.
  if (client.disabled) return pageError("this app is disabled, so Outpost does not send you back to it");
  return appendQuery(input.postLogoutRedirectUri, input.state ? { state: input.state } : {});
}

export async function endSession(deps: Deps, em: EntityManager, input: EndSessionInput): Promise<EndSessionOutcome> {
  const hint = input.idTokenHint ? await verifyHint(deps, input.idTokenHint) : null;
  if (input.idTokenHint && !hint) return pageError("id_token_hint is not an ID token of this issuer");
  if (hint && input.clientId && input.clientId !== hint.aud) return pageError("client_id is not the audience of id_token_hint");
  const back = await returnUrl(deps, em, input, hint?.aud ?? input.clientId);
  if (back !== null && typeof back === "object") return back;
  const session = looksLike("session", input.sessionToken) ? await findSession(deps.statements.on(em), hashSecret(input.sessionToken)) : undefined;
  if (session && !hint && !input.confirmed) return { case: "confirm", value: true };
  // A hint for another user leaves this browser's session alone: that user is not signed in here.
  const ending = session && (hint ? hint.sub === session.user_id : input.confirmed) ? session : undefined;
  if (ending) {
    await em.transactional(async (tx) => {
      recordActivity(
        tx,
        { kind: "account", userId: ending.user_id, email: ending.email },
        {
          action: "user.signed_out",
          targetType: "session",
          targetId: ending.id,
          details: { via: "account_oauth.end_session", clientId: hint?.aud ?? input.clientId, ...(!hint && { confirmed: "true" }) },
        },
      );
      await tx.nativeDelete(Session, { id: ending.id });
    });
  }
  const outcome: EndSessionOutcome = back ? { case: "redirectUrl", value: back } : { case: "signedOut", value: true };
  return { ...outcome, sessionEnded: !!ending };
}
