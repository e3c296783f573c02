import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import {
  ForeignKeyConstraintViolationException,
  NotFoundError,
  UniqueConstraintViolationException,
} from "@mikro-orm/core";
import type { Logger } from "pino";
import { DomainError } from "../errors.ts";

/**
 * The one place where failures become Connect errors: domain errors keep their code, reason and
 * message; ORM not-found and constraint errors get the code that fits; anything else becomes
 * `internal` with its message hidden from the caller and logged with its cause.
 */
export function createErrorInterceptor(logger: Logger): Interceptor {
  return (next) => async (req) => {
    try {
      return await next(req);
    } catch (error) {
      if (error instanceof ConnectError) throw error;
      if (error instanceof DomainError) throw error.toConnectError();
      if (error instanceof NotFoundError) throw new ConnectError("not found", Code.NotFound, undefined, undefined, error);
      if (error instanceof UniqueConstraintViolationException) {
        throw new ConnectError("already exists", Code.AlreadyExists, undefined, undefined, error);
      }
      if (error instanceof ForeignKeyConstraintViolationException) {
        throw new ConnectError("a referenced resource does not exist", Code.FailedPrecondition, undefined, undefined, error);
      }
      logger.error({ err: error, procedure: req.url }, "unexpected error in a core procedure");
      throw new ConnectError("internal error", Code.Internal, undefined, undefined, error);
    }
  };
}
