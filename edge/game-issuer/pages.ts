/**
 * The issuer's HTML: the hosted sign-in page and the error page. Server-rendered, with the script
 * and the style as assets under /oauth2/assets/ (edge/pages.ts) (no inline script or style, no CDN), so both run
 * under a strict Content-Security-Policy.
 */
import { AssetSet, page } from "../pages.ts";
import { html, type Html } from "../html.ts";
import type { Challenge } from "altcha-lib/v1/types";
import { Game } from "../../gen/outpost/servers/v1/resources_pb.js";
import type { AuthorizationSession } from "../../gen/outpost/gameoauth/v1/game_oauth_service_pb.js";
import { playerTrust } from "../player-trust.ts";

export const assets = new AssetSet("/oauth2/assets/", new URL("./assets/", import.meta.url), ["hosted.js", "hosted.css"]);

/** The issuer's pages: one card; only the hosted page runs the script. */
function layout(title: string, body: Html, script: boolean): Html {
  return page({
    title,
    stylesheets: [assets.href("hosted.css")],
    scripts: script ? [assets.href("hosted.js")] : [],
    body: html`<main class="card">
${body}
</main>`,
  });
}

/** An authorization request that cannot be sent back to the app: says what is wrong, links nowhere. */
export function errorPage(error: string, description: string): Html {
  return layout(
    "Sign-in cannot start",
    html`<h1>This sign-in cannot start</h1>
<p class="problem" id="problem"><strong>${error}</strong>: ${description}</p>
<p>The app that sent you here is not set up correctly for Outpost. You can close this page; the app's developers need to check its client and redirect address.</p>`,
    false,
  );
}

export interface ErrorRedirect {
  error: string;
  description: string;
  /** The registered redirect URI the error would go back to. */
  redirectUri: string;
  /** redirect_uri with error, error_description, state and iss: exactly what a redirect would send. */
  href: string;
}

/**
 * An authorization error of a client whose organization Outpost has not verified: instead of
 * redirecting from Outpost's origin to an address anyone may register, name that address and let
 * the user decide to go there (no script, no automatic redirect).
 */
export function errorRedirectPage({ error, description, redirectUri, href }: ErrorRedirect): Html {
  const host = new URL(redirectUri).host;
  return layout(
    "Sign-in cannot start",
    html`<h1>This sign-in cannot start</h1>
<p class="problem" id="problem"><strong>${error}</strong>: ${description}</p>
<p>The app that sent you here made a request Outpost cannot accept. Outpost has not verified who runs this app, so it does not send you back there by itself. The app would be told about the problem at:</p>
<p class="destination" id="destination">${host}</p>
<p><a class="button" id="continue" href="${href}" rel="noreferrer">Continue to ${host}</a></p>
<p class="muted">If you do not know this address, close this page instead.</p>`,
    false,
  );
}

function gameName(game: Game): string {
  return game === Game.MINECRAFT ? "Minecraft" : game === Game.HYTALE ? "Hytale" : "game";
}

/**
 * Where the player may run the command: the client's servers, each with whether it can sign them
 * in (edge/player-trust.ts's words, as on the dashboard), or any server of the organization.
 */
function serversHtml(session: AuthorizationSession): Html {
  if (session.anyServer || session.servers.length === 0) {
    return html`<p>Run it on <strong>any game server of the organization</strong> that registered ${session.clientName} and can sign players in.</p>`;
  }
  const items = session.servers.map((s) => {
    const trust = playerTrust(s.playerAuth, s.signInAllowed);
    return html`<li>${s.name} <span class="muted">(${gameName(s.game)}${s.online ? ", online" : ", offline"})</span><br><span class="trust ${trust.tone}">${trust.label}</span></li>
`;
  });
  return html`<p>Run it on one of these servers:</p>
<ul class="servers">
${items}</ul>`;
}

export interface HostedPageData {
  session: AuthorizationSession;
  challenge: Challenge;
  expiresAt: string;
}

/**
 * The hosted page. The login code is not in it: the script solves the challenge, the server
 * verifies it and only then answers with the code.
 */
export function hostedPage({ session, challenge, expiresAt }: HostedPageData): Html {
  const name = session.clientName;
  const host = session.redirectHost;
  return layout(
    `Sign in to ${session.clientName} with your game account`,
    html`<h1>Sign in to <span class="app">${name}</span></h1>
<p>${name} (at <strong>${host}</strong>) wants to know which game account is yours. Prove it by running a command on one of its game servers.</p>
<div id="hosted" data-session="${session.sessionId}" data-challenge="${JSON.stringify(challenge)}" data-expires-at="${expiresAt}" data-app="${name}" data-host="${host}">
<section id="check" aria-labelledby="check-title">
<h2 id="check-title">1. Browser check</h2>
<p id="check-status" role="status" aria-live="polite">Checking your browser…</p>
<noscript><p class="problem">This page needs JavaScript for its browser check and live status.</p></noscript>
</section>
<section id="code-step" aria-labelledby="code-title" hidden>
<h2 id="code-title">2. Run this command in game</h2>
<p>Your login code is <strong id="login-code" class="code"></strong>.</p>
<div class="command-row">
<label for="command" class="visually-hidden">Command to run in game</label>
<input id="command" class="command" type="text" readonly value="" aria-describedby="code-title">
<button id="copy" type="button">Copy</button>
</div>
<p id="copy-status" class="muted" role="status" aria-live="polite"></p>
${serversHtml(session)}
<p id="confirm-advice">The game then asks you to confirm: <strong>Sign in to ${name} at ${host}?</strong> Type <code>/outpost confirm</code> only if you started this sign-in yourself, on this page. If someone else gave you a login code or a command to type, do not confirm: they would be signed in to ${name} as you.</p>
<p>This sign-in expires in <time id="countdown" datetime="${expiresAt}">10:00</time>.</p>
</section>
<p id="live-status" class="status" role="status" aria-live="polite">Keep this page open.</p>
</div>`,
    true,
  );
}
