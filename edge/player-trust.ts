/**
 * How a game server's players are trusted, in the words every page uses (the dashboard's server
 * list and page, the hosted sign-in page's server list): one short label and what it means for
 * signing in with Game OAuth. One place, so the pages cannot disagree about a server.
 */
import { PlayerAuth } from "../gen/outpost/servers/v1/resources_pb.js";

export interface PlayerTrust {
  /** A few words, e.g. "Verifies players (online mode)". */
  label: string;
  /** One sentence on what follows for sign-ins. */
  detail: string;
  /** `ok`: signs players in; `dev`: signs them in only because the deployment allows it; `refused`; `unknown`. */
  tone: "ok" | "dev" | "refused" | "unknown";
}

/** The trust a server's reported `playerAuth` and core's `signInAllowed` add up to. */
export function playerTrust(playerAuth: PlayerAuth, signInAllowed: boolean): PlayerTrust {
  switch (playerAuth) {
    case PlayerAuth.ONLINE:
      return { label: "Verifies players (online mode)", detail: "The game checks every player's account, so players can sign in to apps here.", tone: "ok" };
    case PlayerAuth.PROXY:
      return {
        label: "Behind an authenticating proxy",
        detail: "The proxy checks every player's account and forwards it with a secret, so players can sign in to apps here.",
        tone: "ok",
      };
    case PlayerAuth.OFFLINE:
    case PlayerAuth.INSECURE:
      return unverified(playerAuth === PlayerAuth.OFFLINE ? "Offline mode" : "Unverified proxy", signInAllowed);
    default:
      return { label: "Unknown until the agent connects", detail: "The agent reports how the server checks its players when it connects.", tone: "unknown" };
  }
}

/** A server that cannot prove who its players are: refused, unless the deployment allows it. */
function unverified(mode: string, signInAllowed: boolean): PlayerTrust {
  if (signInAllowed) {
    return {
      label: `${mode} — sign-in allowed for development`,
      detail: "Anyone can join under any name; this deployment allows sign-ins here anyway (ALLOW_INSECURE_GAME_SERVERS). Never in production.",
      tone: "dev",
    };
  }
  return {
    label: `${mode} — sign-in refused`,
    detail: "Anyone can join under any name, so this server cannot prove who a player is: sign-ins here are refused in game.",
    tone: "refused",
  };
}
