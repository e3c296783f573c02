/**
 * The agent's questions to Outpost that Outpost answers by request id (a player's in-game
 * command, their confirmation): each gets a new id, waits for its LoginReply or a timeout, and
 * fails at once when the connection drops, since the answer could no longer arrive.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ConnectRequestSchema, LoginReply } from "../gen/outpost/agent/v1/agent_service_pb.js";

/** One message of the agent's stream. */
export type AgentMessage = MessageInitShape<typeof ConnectRequestSchema>["message"];

export interface Reply {
  /** The player is now signed in. */
  accepted: boolean;
  /** What to show the player. */
  message: string;
  /**
   * Set when a login code claimed a sign-in that waits for the player to confirm it (then
   * `message` is the prompt): answer with `Agent.confirm` or `Agent.cancel`, or the player types
   * `/outpost confirm` or `/outpost cancel`.
   */
  confirmation?: Confirmation;
}

export interface Confirmation {
  appName: string;
  /** Where the app receives the sign-in (its redirect URI's host). */
  redirectHost: string;
  expiresInSeconds: number;
}

/** The connection ended before Outpost answered: the question may not have reached it. */
export class ConnectionDropped extends Error {
  constructor() {
    super("the connection to Outpost dropped before it answered");
  }
}

export interface PendingRequests {
  /** Sends what `build` makes with a new request id and resolves with Outpost's reply to it. */
  request(send: (message: AgentMessage) => unknown, timeoutMs: number, build: (requestId: string) => AgentMessage): Promise<Reply>;
  /** A LoginReply from Outpost: settles the request it answers (a late one is dropped). */
  answer(reply: LoginReply): void;
  /** The connection dropped: every request still waiting fails with `error`. */
  failAll(error: Error): void;
}

export function createPendingRequests(): PendingRequests {
  let nextRequestId = 0;
  const pending = new Map<string, (reply: Reply | Error) => void>();
  return {
    request(send, timeoutMs, build) {
      const requestId = String(++nextRequestId);
      return new Promise<Reply>((resolve, reject) => {
        const timer = setTimeout(() => settle(new Error(`Outpost did not answer within ${timeoutMs / 1000} seconds`)), timeoutMs);
        const settle = (reply: Reply | Error) => {
          clearTimeout(timer);
          pending.delete(requestId);
          if (reply instanceof Error) reject(reply);
          else resolve(reply);
        };
        pending.set(requestId, settle);
        send(build(requestId));
      });
    },
    answer({ requestId, accepted, message, confirmation }) {
      const reply: Reply = { accepted, message };
      if (confirmation) {
        const { appName, redirectHost, expiresInSeconds } = confirmation;
        reply.confirmation = { appName, redirectHost, expiresInSeconds };
      }
      pending.get(requestId)?.(reply);
    },
    failAll(error) {
      for (const settle of [...pending.values()]) settle(error);
      pending.clear();
    },
  };
}
