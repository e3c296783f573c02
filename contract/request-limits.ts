/**
 * How large a message the Connect services at /api/rpc take, shared by the server (Connect's
 * `readMaxBytes`, which also bounds a compressed message once decompressed) and the edge (which
 * refuses a larger declared body before anything reads it).
 */
import { AgentService } from "../gen/outpost/agent/v1/agent_service_pb.js";
import { KnowledgeService } from "../gen/outpost/knowledge/v1/knowledge_service_pb.js";
import { ServersService } from "../gen/outpost/servers/v1/servers_service_pb.js";

/**
 * Any message but the agent's. The largest the contract allows is a Game OAuth or Account OAuth
 * client with 16 redirect URIs of 2,048 ASCII characters and 100 server ids: about 37 KB in
 * binary or in JSON.
 */
export const messageMaxBytes = 64 * 1024;

/** The most players one Players message may list (the contract's `max_items`). */
export const maxPlayersPerMessage = 5000;

/**
 * One message on the agent's stream. The largest is a FileResult with a file's content, up to
 * 5 MiB: 5 MiB in binary, 6.7 MiB in JSON (base64), plus its path and hash. (Next, Players with
 * 5,000 players, each a UUID and a name of at most 32 characters: under 1 MB either way.)
 */
export const agentMessageMaxBytes = 8 * 1024 * 1024;

/**
 * servers/writeFile: up to 5 MiB of content, as text or base64 (6.7 MiB), which JSON may escape
 * further (a quote or backslash takes two bytes; most control characters six).
 */
export const fileWriteMessageMaxBytes = 16 * 1024 * 1024;

/** servers/uploadFile: each message of its stream, a piece of at most 1 MiB (in JSON, base64: 1.4 MiB). */
export const uploadMessageMaxBytes = 2 * 1024 * 1024;

/**
 * One message of the knowledge service: a note's content is up to 100,000 characters, 4 UTF-8
 * bytes each at worst (400 KB in binary or JSON), beside a title of 200 and 20 tags.
 */
export const noteMessageMaxBytes = 512 * 1024;

/** Every Connect and gRPC message on a stream, and a gRPC unary one, has a 5-byte envelope. */
export const envelopeBytes = 5;

/** The largest message a procedure of the contract takes, by its service's full name and its method's name. */
export function rpcMessageMaxBytes(serviceTypeName: string, methodName = ""): number {
  if (serviceTypeName === AgentService.typeName) return agentMessageMaxBytes;
  if (serviceTypeName === ServersService.typeName && methodName === ServersService.method.writeFile.name) return fileWriteMessageMaxBytes;
  if (serviceTypeName === ServersService.typeName && methodName === ServersService.method.uploadFile.name) return uploadMessageMaxBytes;
  return serviceTypeName === KnowledgeService.typeName ? noteMessageMaxBytes : messageMaxBytes;
}

/**
 * The largest body a request to `/api/rpc/<service>/<method>` may declare: one message with its
 * envelope (a stream without a declared length is bounded per message as it is read).
 */
export function rpcBodyMaxBytes(procedurePath: string): number {
  const [service = "", method = ""] = procedurePath.split("/").slice(-2);
  return rpcMessageMaxBytes(service, method) + envelopeBytes;
}
