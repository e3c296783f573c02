/**
 * One agent stream's side of file operations: each sent as a FileRequest and waiting for its
 * FileResult by request id (file-router.ts decides which stream; agent-stream.ts makes one per
 * stream).
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ConnectResponseSchema, FileRequestSchema, FileResult } from "../../gen/outpost/agent/v1/agent_service_pb.js";
import { createAnswerWaits } from "./answer-waits.ts";

/** File operations that may wait for one agent's answers at once; past it, one is refused (busy). */
export const maxWaitingFileCalls = 16;

/** One file operation, as core builds it. */
export type FileOperation = MessageInitShape<typeof FileRequestSchema>["operation"];

/** A FileRequest but for its id and timeout, which are the router's: the operation, and whether the caller is confined. */
export type FileCall = Pick<MessageInitShape<typeof FileRequestSchema>, "operation" | "confined">;

/** One agent stream's side of file operations: each sent as a FileRequest and waiting for its FileResult. */
export interface ConnectionFiles {
  /** Sends the operation and resolves with the agent's FileResult; rejects AgentUnanswered (answer-waits.ts). */
  run(requestId: string, call: FileCall, timeoutMs: number): Promise<FileResult>;
  /** A FileResult arrived: answers its operation; one for no waiting operation is ignored. */
  answered(result: FileResult): void;
  /** The stream ended: every waiting operation fails with "offline", and so does any later one. */
  close(): void;
}

export function createConnectionFiles(send: (message: MessageInitShape<typeof ConnectResponseSchema>["message"]) => void): ConnectionFiles {
  const waits = createAnswerWaits<FileResult>(maxWaitingFileCalls);
  return {
    run: (requestId, call, timeoutMs) => waits.ask(requestId, timeoutMs, () => send({ case: "fileRequest", value: { ...call, requestId, timeoutMs } })),
    answered: (result) => waits.answer(result.requestId, result),
    close: () => waits.close(),
  };
}
