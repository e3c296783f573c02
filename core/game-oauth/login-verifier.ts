/**
 * The seam between the agent's side and the Game OAuth issuer: once core has parsed an in-game
 * `/outpost login <CODE>`, made sure the server authenticates its players, and counted the attempt
 * against the wrong-code limits, a LoginVerifier decides whether the code completes a sign-in.
 */

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
}

export interface LoginVerdict {
  /** The sign-in is complete. Every refusal counts as a wrong code for the rate limits. */
  accepted: boolean;
  /** What the player reads in game: which app they signed in to, or why not. */
  message: string;
}

/**
 * What a player reads for a code that opens nothing on this server: unknown, expired, or waiting
 * in another organization. One text for all, without the code, so that a guess learns nothing
 * (a live code of another organization reads exactly like a wrong one).
 */
export const noSignInMessage = "No sign-in is waiting for that code. Check it on the sign-in page, or start again from the app.";

/**
 * Decides an in-game login. The Game OAuth issuer's implementation checks: a hosted sign-in
 * session waiting for this code in the server's organization ({@link noSignInMessage} otherwise);
 * then, each with its own message, that the client's policy allows this server and that this
 * server's agent is connected; then completes it.
 */
export interface LoginVerifier {
  verify(attempt: LoginAttempt): Promise<LoginVerdict>;
}

/** Until the Game OAuth issuer is built no sign-in can be waiting, and it says so. */
export function createNoSignInVerifier(): LoginVerifier {
  return {
    async verify() {
      return { accepted: false, message: noSignInMessage };
    },
  };
}
