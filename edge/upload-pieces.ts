/**
 * A body as servers/uploadFile's client stream, for both ways a file comes in (the HTTP API's PUT
 * servers/uploadFile and the dashboard's upload form): the header naming the file, then its bytes
 * in pieces of at most 1 MiB, read from the body only as core asks for the next, so at most one
 * piece is held whatever the file's size.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { UploadFileRequestSchema, UploadHeaderSchema } from "../gen/outpost/servers/v1/servers_service_pb.js";

/** The largest piece of a file in one message (the contract's bytes.max_len). */
export const uploadPieceBytes = 1024 * 1024;

type UploadMessage = MessageInitShape<typeof UploadFileRequestSchema>;

/** The bytes of `source` in pieces of at most `max` bytes, as few as it allows (holding one piece at most). */
export async function* pieces(source: AsyncIterable<Uint8Array>, max = uploadPieceBytes): AsyncGenerator<Uint8Array> {
  let pending: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of source) {
    let rest = chunk;
    while (size + rest.length >= max) {
      const take = max - size;
      pending.push(rest.subarray(0, take));
      yield Buffer.concat(pending);
      pending = [];
      size = 0;
      rest = rest.subarray(take);
    }
    if (rest.length) {
      pending.push(rest);
      size += rest.length;
    }
  }
  if (size) yield Buffer.concat(pending);
}

/** servers/uploadFile's stream: first the header, then the bytes. */
export async function* uploadMessages(header: MessageInitShape<typeof UploadHeaderSchema>, bytes: AsyncIterable<Uint8Array>): AsyncGenerator<UploadMessage> {
  yield { part: { case: "header", value: header } };
  for await (const piece of pieces(bytes)) yield { part: { case: "data", value: piece } };
}
