/**
 * A unary Connect request whose body is not a protobuf message of the procedure's input (garbage,
 * a truncated message, a length past the end) is the caller's `invalid_argument` (400), as a JSON
 * body that does not parse is. connect-es parses the binary body before any interceptor runs and
 * calls such a failure `internal` (500), because the same code parses a client's responses, where
 * a bad message is the server's fault; it offers no option to say otherwise.
 *
 * So each unary handler is wrapped: the body it reads is kept as it passes (it is bounded by the
 * procedure's message limit, which the handler enforces), and only when the handler answers 500
 * is the same body parsed once more. If that fails too, the parse was the cause, and the answer is
 * Connect's JSON error with `invalid_argument`, worded as the JSON path words it. Any other 500
 * stays as it is. Successful calls cost nothing but the kept chunks.
 */
import { fromBinary, type DescMessage } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { createAsyncIterable, type Compression, type UniversalHandler, type UniversalServerRequest, type UniversalServerResponse } from "@connectrpc/connect/protocol";
import { codeToHttpStatus, contentTypeUnaryJson, errorToJsonBytes, headerContentType, headerUnaryEncoding, parseContentType } from "@connectrpc/connect/protocol-connect";

/** Where a unary request's binary message is, if it has one: the body (POST) or the query (GET). */
function binaryMessageSource(req: UniversalServerRequest): "body" | "query" | undefined {
  if (req.method === "GET") {
    const query = new URL(req.url).searchParams;
    return query.get("encoding") === "proto" ? "query" : undefined;
  }
  const type = parseContentType(req.header.get(headerContentType));
  return type && type.binary && !type.stream ? "body" : undefined;
}

/** A byte body that keeps each chunk in `kept` as the handler reads it. */
function keeping(body: AsyncIterable<Uint8Array>, kept: Uint8Array[]): AsyncIterable<Uint8Array> {
  return (async function* () {
    for await (const chunk of body) {
      kept.push(chunk);
      yield chunk;
    }
  })();
}

/** The request's message bytes as the handler saw them, decompressed. */
async function messageBytes(
  req: UniversalServerRequest,
  source: "body" | "query",
  kept: Uint8Array[],
  compressions: readonly Compression[],
  readMaxBytes: number,
): Promise<Uint8Array> {
  let bytes: Uint8Array;
  let encoding: string | null;
  if (source === "query") {
    const query = new URL(req.url).searchParams;
    const message = query.get("message") ?? "";
    bytes = query.get("base64") === "1" ? Buffer.from(message, "base64url") : new TextEncoder().encode(message);
    encoding = query.get("compression");
  } else {
    bytes = Buffer.concat(kept);
    encoding = req.header.get(headerUnaryEncoding);
  }
  const compression = compressions.find((c) => c.name === encoding);
  return compression ? compression.decompress(bytes, readMaxBytes) : bytes;
}

/** Why `bytes` is not a message of `desc`, or undefined when it is one. */
function parseProblem(desc: DescMessage, bytes: Uint8Array): string | undefined {
  try {
    fromBinary(desc, bytes);
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

/** Connect's unary error response for `error`. */
function errorResponse(error: ConnectError): UniversalServerResponse {
  const body = errorToJsonBytes(error, undefined);
  return {
    status: codeToHttpStatus(error.code),
    header: new Headers({ [headerContentType]: contentTypeUnaryJson, "content-length": String(body.byteLength) }),
    body: createAsyncIterable([body]),
  };
}

/**
 * `handler`, answering `invalid_argument` where it would answer `internal` for a unary binary
 * message that does not parse (see above). Streaming handlers are returned as they are.
 */
export function malformedIsInvalid(handler: UniversalHandler, compressions: readonly Compression[], readMaxBytes: number): UniversalHandler {
  if (handler.method.methodKind !== "unary") return handler;
  const wrapped = async (req: UniversalServerRequest): Promise<UniversalServerResponse> => {
    const source = binaryMessageSource(req);
    const body = req.body;
    if (!source || (source === "body" && !(typeof body === "object" && body !== null && Symbol.asyncIterator in body))) return handler(req);
    const kept: Uint8Array[] = [];
    const res = await handler(source === "body" ? { ...req, body: keeping(body as AsyncIterable<Uint8Array>, kept) } : req);
    if (res.status !== 500) return res;
    let bytes: Uint8Array;
    try {
      bytes = await messageBytes(req, source, kept, compressions, readMaxBytes);
    } catch {
      return res;
    }
    const problem = parseProblem(handler.method.input, bytes);
    if (problem === undefined) return res;
    return errorResponse(new ConnectError(`cannot decode message ${handler.method.input.typeName} from binary: ${problem}`, Code.InvalidArgument));
  };
  return Object.assign(wrapped, {
    requestPath: handler.requestPath,
    service: handler.service,
    method: handler.method,
    protocolNames: handler.protocolNames,
    supportedContentType: handler.supportedContentType,
    allowedMethods: handler.allowedMethods,
  });
}
