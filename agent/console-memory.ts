/**
 * What the agent remembers of the console commands Outpost sent it in this run (its process), so
 * that Outpost can settle what really happened whatever dropped meanwhile: the request ids of the
 * last {@link rememberedCommands} commands it got, and the results of the last
 * {@link rememberedResults}. A result goes out on the connection that is live when the command
 * ends (not necessarily the one it came on); on each new connection, once welcomed, the results
 * of the last {@link resentWithinMs} are sent again (an older one's caller has long been told),
 * then ConsoleReceived: the ids, and whether they are all of this run's. Outpost ignores a result
 * it has settled already.
 */
import { randomUUID } from "node:crypto";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ConsoleResultSchema } from "../gen/outpost/agent/v1/agent_service_pb.js";
import type { AgentMessage } from "./requests.ts";

export const rememberedCommands = 1000;
export const rememberedResults = 100;
export const resentWithinMs = 10 * 60_000;

type Result = MessageInitShape<typeof ConsoleResultSchema>;

export interface ConsoleMemory {
  /** Names this run (Hello.boot_id). */
  readonly bootId: string;
  /** A ConsoleCommand arrived. */
  received(requestId: string): void;
  /** Its result: kept, and sent on the live connection if there is one. */
  answered(result: Result): void;
  /** A connection was welcomed (its `send`) or ended (undefined); a welcomed one gets the report. */
  attach(send: ((message: AgentMessage) => void) | undefined): void;
}

export function createConsoleMemory(bootId: string = randomUUID(), now: () => number = Date.now): ConsoleMemory {
  const ids = new Set<string>();
  let results: Array<{ result: Result; at: number }> = [];
  let complete = true;
  let send: ((message: AgentMessage) => void) | undefined;
  return {
    bootId,
    received(requestId) {
      ids.delete(requestId);
      ids.add(requestId);
      if (ids.size <= rememberedCommands) return;
      ids.delete(ids.values().next().value!);
      complete = false;
    },
    answered(result) {
      results = [...results.filter((r) => r.result.requestId !== result.requestId), { result, at: now() }].slice(-rememberedResults);
      send?.({ case: "consoleResult", value: result });
    },
    attach(to) {
      send = to;
      if (!send) return;
      results = results.filter((r) => r.at > now() - resentWithinMs);
      for (const { result } of results) send({ case: "consoleResult", value: result });
      send({ case: "consoleReceived", value: { bootId, requestIds: [...ids], complete } });
    },
  };
}
