import { Code, ConnectError, type Interceptor, type StreamResponse } from "@connectrpc/connect";
import {
  ForeignKeyConstraintViolationException,
  NotFoundError,
  UniqueConstraintViolationException,
} from "@mikro-orm/core";
import type { Logger } from "pino";
import { DomainError } from "../errors.ts";
import { requestIdHeader } from "../../contract/credentials.ts";

/**
 * The one place where failures become Connect errors: domain errors keep their code, reason and
 * message; ORM not-found and constraint errors get the code that fits; anything else becomes
 * `internal` with its message hidden from the caller and logged with its cause. A streaming
 * call's failures arrive while its responses are read, so those are translated there too.
 */
export function createErrorInterceptor(logger: Logger): Interceptor {
  const translate = (error: unknown, procedure: string, requestId: string | undefined): ConnectError => {
    if (error instanceof ConnectError) return error;
    if (error instanceof DomainError) return error.toConnectError();
    if (error instanceof NotFoundError) return new ConnectError("not found", Code.NotFound, undefined, undefined, error);
    if (error instanceof UniqueConstraintViolationException) {
      return new ConnectError("already exists", Code.AlreadyExists, undefined, undefined, error);
    }
    if (error instanceof ForeignKeyConstraintViolationException) {
      return new ConnectError("a referenced resource does not exist", Code.FailedPrecondition, undefined, undefined, error);
    }
    // The edge's request id, when the call serves one: the id a person quotes from the error page.
    logger.error({ err: error, procedure, requestId }, "unexpected error in a core procedure");
    return new ConnectError("internal error", Code.Internal, undefined, undefined, error);
  };
  async function* translated<T>(messages: AsyncIterable<T>, procedure: string, requestId: string | undefined): AsyncIterable<T> {
    try {
      yield* messages;
    } catch (error) {
      throw translate(error, procedure, requestId);
    }
  }
  return (next) => async (req) => {
    const requestId = req.header.get(requestIdHeader) ?? undefined;
    try {
      const res = await next(req);
      if (!res.stream) return res;
      return { ...res, message: translated(res.message, req.url, requestId) } as StreamResponse;
    } catch (error) {
      throw translate(error, req.url, requestId);
    }
  };
}
