/**
 * Whether a game server can sign players in with Game OAuth, decided here once: by how it
 * authenticates its players, as its agent reports (`--auth`), and the deployment's
 * ALLOW_INSECURE_GAME_SERVERS. A server in online mode, or in offline mode behind a proxy that
 * authenticates players and forwards them with a secret, knows who a player is; one in offline
 * mode lets anyone join under any name, so a sign-in there would sign in whoever typed the name.
 * The in-game command, the servers API (`sign_in_allowed`) and the hosted page's server list all
 * ask {@link signInRefusal}.
 */
import type { CoreConfig } from "../deps.ts";

export type TrustSettings = Pick<CoreConfig, "allowInsecureGameServers">;

/** Modes in which the server itself proves who each player is. */
const verifiedModes = new Set(["online", "proxy"]);

/** Whether the server proves who its players are (player_auth online or proxy). */
export function verifiesPlayers(playerAuth: string | null | undefined): boolean {
  return !!playerAuth && verifiedModes.has(playerAuth);
}

/**
 * Why a player cannot sign in on a server with this player_auth, in words for the player and the
 * server's owner; undefined when they can. No agent ever reported (null): cannot.
 */
export function signInRefusal(playerAuth: string | null | undefined, settings: TrustSettings): string | undefined {
  if (verifiesPlayers(playerAuth)) return undefined;
  if (playerAuth && settings.allowInsecureGameServers) return undefined;
  if (playerAuth === "offline") {
    return "This server runs in offline mode, which cannot prove who you are, so it cannot sign you in. (Server owner: behind a proxy that authenticates players, run the agent with --auth proxy.)";
  }
  if (playerAuth === "insecure") {
    return "This server cannot prove who you are (its proxy forwards players without a secret), so it cannot sign you in. (Server owner: with Velocity modern forwarding or BungeeGuard, run the agent with --auth proxy.)";
  }
  return "This server has not told Outpost how it verifies players, so it cannot sign you in.";
}

/** Whether a player can sign in on a server with this player_auth (see {@link signInRefusal}). */
export function signInAllowed(playerAuth: string | null | undefined, settings: TrustSettings): boolean {
  return signInRefusal(playerAuth, settings) === undefined;
}

/**
 * The player_auth of a server that signs players in only because the deployment allows insecure
 * servers, for the activity log and the log to say so; undefined for a server that verifies them.
 */
export function insecurelyAllowed(playerAuth: string | null | undefined, settings: TrustSettings): string | undefined {
  return !verifiesPlayers(playerAuth) && signInAllowed(playerAuth, settings) ? (playerAuth ?? undefined) : undefined;
}
