/**
 * The seam between the agent's side and the Game OAuth issuer: once core has parsed an in-game
 * command and made sure the server authenticates its players, a LoginVerifier decides what a
 * login code claims (after the attempt was counted against the wrong-code limits) and what the
 * player's confirmation or cancellation does.
 *
 * A valid code alone signs no one in (RFC 8628 §5.4, remote phishing: whoever posts "type
 * /outpost login ABCD-1234 for a reward" in chat would otherwise be signed in as whoever obeys).
 * It claims the waiting sign-in for that player on that server and asks them, naming the app and
 * where it lives, to confirm it within {@link confirmWindowSeconds} (or the time the sign-in has
 * left, if less) only if they started it.
 */
import { confirmCommand } from "../../contract/login-command.ts";

/** How long a player has to confirm a sign-in they claimed. */
export const confirmWindowSeconds = 60;

export interface LoginAttempt {
  /** The game server the command was run on, as its agent key identified it. */
  server: { id: string; organizationId: string; name: string; game: string };
  /** Who ran it, as the game server (which authenticates its players) identified them. */
  player: { uuid: string; name: string };
  /** The code typed, normalized: eight upper-case characters, no hyphen ("ABCD1234"). */
  code: string;
  /**
   * SHA-256 of the agent key the reporting stream authenticated with: a stream that outlived its
   * key (regenerated while the agent was connected to another instance) signs no one in.
   */
  agentKeyHash: string;
  /**
   * Set only when the server cannot prove who its players are and signs them in because the
   * deployment allows it (ALLOW_INSECURE_GAME_SERVERS): its player_auth, which the sign-in's
   * activity names.
   */
  insecurePlayerAuth?: string;
}

/** `/outpost confirm` or `/outpost cancel`: the player's answer to the claim they made on this server. */
export type LoginAnswer = Omit<LoginAttempt, "code"> & { decision: "confirm" | "cancel" };

/** What the player is asked to confirm, in parts a game plugin can render. */
export interface ConfirmationPrompt {
  appName: string;
  /** The host (and port) of the app's redirect URI. */
  redirectHost: string;
  /** Whole seconds left to confirm, rounded down. */
  expiresInSeconds: number;
}

export interface LoginVerdict {
  /** The sign-in is complete. */
  accepted: boolean;
  /** What the player reads in game: the prompt, which app they signed in to, or why not. */
  message: string;
  /**
   * Set when the code was right and claimed a sign-in that now waits for the player's
   * confirmation. A verdict with neither this nor `accepted` counts as a wrong code.
   */
  confirmation?: ConfirmationPrompt;
}

/**
 * What a player reads for a code that opens nothing on this server: unknown, expired, waiting in
 * another organization, or claimed by another player. One text for all, without the code, so that
 * a guess learns nothing (a live code of another organization reads exactly like a wrong one).
 */
export const noSignInMessage = "No sign-in is waiting for that code. Check it on the sign-in page, or start again from the app.";

/**
 * What a player reads for a confirmation or cancellation with nothing to answer on this server:
 * no claim of theirs here, or its time ran out. One text for all (another player's claim, or one
 * made on another server, is not theirs to answer).
 */
export const nothingToConfirmMessage = `No sign-in is waiting for your confirmation on this server. Run /outpost login <CODE> first.`;

/** The prompt of a claimed sign-in. */
export function confirmationMessage(prompt: ConfirmationPrompt): string {
  return `Sign in to ${prompt.appName} at ${prompt.redirectHost}? Type ${confirmCommand} within ${prompt.expiresInSeconds} s — only if you started this yourself.`;
}

/** The reply to a cancellation. */
export function cancelledMessage(appName: string): string {
  return `Cancelled: you were not signed in to ${appName}.`;
}

/**
 * Decides in-game logins. The Game OAuth issuer's implementation checks a code: a hosted sign-in
 * session waiting for it in the server's organization and not claimed by another player
 * ({@link noSignInMessage} otherwise); then, each with its own message, that the client's policy
 * allows this server and that this server's agent is connected; then claims it. A confirmation
 * checks the server again and completes the sign-in.
 */
export interface LoginVerifier {
  /** `/outpost login <CODE>`: claims the sign-in waiting for the code, asking to confirm. */
  verify(attempt: LoginAttempt): Promise<LoginVerdict>;
  /** `/outpost confirm` or `/outpost cancel`: completes or releases this player's claim on this server. */
  answer(answer: LoginAnswer): Promise<LoginVerdict>;
}

/** Until the Game OAuth issuer is built no sign-in can be waiting, and it says so. */
export function createNoSignInVerifier(): LoginVerifier {
  return {
    async verify() {
      return { accepted: false, message: noSignInMessage };
    },
    async answer() {
      return { accepted: false, message: nothingToConfirmMessage };
    },
  };
}
