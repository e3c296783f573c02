/**
 * File operations to whichever stream holds the server, as console commands go (console-router.ts):
 * directly when the stream is open on this instance, otherwise to the instance that holds it. A
 * file's content (up to 5 MiB) does not fit a bus message (under 8,000 bytes), so across instances
 * the operation and its result wait in a row of `agent_file_calls` and the bus carries only the
 * row's id: the calling instance writes the request, the holding instance runs it and writes the
 * result, and the caller reads it and deletes the row. One router per process, built by the
 * composition root.
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import type { Logger } from "pino";
import { FileRequestSchema, FileResultSchema, type FileResult } from "../../gen/outpost/agent/v1/agent_service_pb.js";
import type { Bus } from "../bus.ts";
import { sql, type SqlRunner } from "../db/sql.ts";
import { bytes, nullable, row } from "../db/rows.ts";
import { AgentUnanswered } from "./answer-waits.ts";
import type { FileCall } from "./connection-files.ts";
import type { AgentConnection, AgentConnections } from "./connections.ts";

/** How long a file operation waits for the agent (told to it as timeout_ms). */
export const fileTimeoutMs = 30_000;

/** Rows of calls older than this are left over from an instance that died mid-call, and swept. */
const staleCallMs = 2 * 60_000;

export interface FileTarget {
  serverId: string;
  /** The stream that holds the server, as its row says. */
  connectionId: string;
}

export interface FileRouter {
  /**
   * Runs the operation on the target stream's agent and resolves with its FileResult (which may
   * be a refusal: `result.case === "failure"`); rejects {@link AgentUnanswered} when the stream
   * is gone or ends first, no answer comes in time, or too many operations wait for that agent.
   */
  execute(target: FileTarget, requestId: string, call: FileCall, timeoutMs?: number): Promise<FileResult>;
  /** The stream holds its server now: operations from other instances reach it, until the returned detach. */
  attach(connection: AgentConnection): () => void;
}

const callTopic = (connectionId: string) => `file-call:${connectionId}`;
const resultTopic = (requestId: string) => `file-result:${requestId}`;
const outcomes = new Set<string>(["offline", "timeout", "busy"]);

/** What the holding instance publishes once the result is in the row, or why there is none. */
type RemoteOutcome = { done: true } | { unanswered: AgentUnanswered["outcome"]; sent: boolean };

function parseOutcome(payload: string): RemoteOutcome | undefined {
  try {
    const value = JSON.parse(payload) as Partial<{ done: boolean; unanswered: string; sent: boolean }>;
    if (value.done === true) return { done: true };
    if (typeof value.unanswered === "string" && outcomes.has(value.unanswered)) {
      return { unanswered: value.unanswered as AgentUnanswered["outcome"], sent: value.sent !== false };
    }
  } catch {
    // Not ours, or damaged: as if nothing came.
  }
  return undefined;
}

const requestRow = row({ request: bytes });
const resultRow = row({ result: nullable(bytes) });

export function createFileRouter(deps: { agents: AgentConnections; bus: Bus; logger: Logger; query: SqlRunner }): FileRouter {
  const { bus, query } = deps;

  /** On the holding instance: runs the call whose row `payload` names and writes its result there. */
  async function serve(connection: AgentConnection, payload: string): Promise<void> {
    const found = await query.one(sql`select request from agent_file_calls where id = ${payload} and connection_id = ${connection.id}`, requestRow);
    if (!found) return;
    const request = fromBinary(FileRequestSchema, found.request);
    let outcome: RemoteOutcome;
    try {
      const result = await connection.files.run(request.requestId, request, Math.min(request.timeoutMs, fileTimeoutMs));
      await query.run(sql`update agent_file_calls set result = ${Buffer.from(toBinary(FileResultSchema, result))} where id = ${payload}`);
      outcome = { done: true };
    } catch (error) {
      if (!(error instanceof AgentUnanswered)) throw error;
      outcome = { unanswered: error.outcome, sent: error.sent };
    }
    await bus.publish(resultTopic(payload), JSON.stringify(outcome));
  }

  /** On the instance the call reached: stages the request, wakes the holder, and reads the result it wrote. */
  async function executeRemote(target: FileTarget, requestId: string, call: FileCall, timeoutMs: number): Promise<FileResult> {
    const request = toBinary(FileRequestSchema, create(FileRequestSchema, { ...call, requestId, timeoutMs }));
    await query.run(sql`delete from agent_file_calls where created_at < ${new Date(Date.now() - staleCallMs)}`);
    await query.run(
      sql`insert into agent_file_calls (id, connection_id, request, created_at) values (${requestId}, ${target.connectionId}, ${Buffer.from(request)}, ${new Date()})`,
    );
    try {
      const outcome = await new Promise<RemoteOutcome>((resolve, reject) => {
        const done = (then: () => void) => {
          clearTimeout(timer);
          unsubscribe();
          then();
        };
        // The holding instance's stream times out as well; this is the bound if it never answers.
        const timer = setTimeout(() => done(() => reject(new AgentUnanswered("timeout"))), timeoutMs + 1_000);
        const unsubscribe = bus.subscribe(resultTopic(requestId), (payload) => {
          const parsed = parseOutcome(payload);
          if (parsed) done(() => resolve(parsed));
        });
        bus.publish(callTopic(target.connectionId), requestId).then(
          (delivered) => delivered || done(() => reject(new AgentUnanswered("offline", false))),
          (error) => done(() => reject(error)),
        );
      });
      if ("unanswered" in outcome) throw new AgentUnanswered(outcome.unanswered, outcome.sent);
      const written = await query.one(sql`select result from agent_file_calls where id = ${requestId}`, resultRow);
      if (!written?.result) throw new AgentUnanswered("offline");
      return fromBinary(FileResultSchema, written.result);
    } finally {
      await query.run(sql`delete from agent_file_calls where id = ${requestId}`);
    }
  }

  return {
    async execute(target, requestId, call, timeoutMs = fileTimeoutMs) {
      const local = deps.agents.holding(target.connectionId);
      if (local) return local.files.run(requestId, call, timeoutMs);
      // One process: a stream not here is no stream.
      if (!bus.shared) throw new AgentUnanswered("offline", false);
      return executeRemote(target, requestId, call, timeoutMs);
    },
    attach(connection) {
      return bus.subscribe(callTopic(connection.id), (payload) => {
        serve(connection, payload).catch((error) =>
          deps.logger.error({ err: error, serverId: connection.serverId }, "answering a file operation from another instance failed"),
        );
      });
    },
  };
}
