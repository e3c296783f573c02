import { Code, ConnectError, type Interceptor, type StreamResponse } from "@connectrpc/connect";
import { ForeignKeyConstraintViolationException, NotFoundError, UniqueConstraintViolationException } from "@mikro-orm/core";
import type { Logger } from "pino";
import { create } from "@bufbuild/protobuf";
import { RetryInfoSchema } from "../../gen/outpost/errors/v1/errors_pb.js";
import { DomainError } from "../errors.ts";
import { isDatabaseUnavailable } from "../db/unavailable.ts";
import { throttledWarning } from "../log-throttle.ts";
import type { Metrics } from "../metrics.ts";

/**
 * Seconds a caller is told to wait when the database cannot be reached: the pool makes a new
 * connection on the next call, so a restarted PostgreSQL is in use again within this.
 */
export const databaseRetryAfterSeconds = 2;

function databaseUnavailable(): DomainError {
  return new DomainError("database_unavailable", "Outpost cannot reach its database right now; try again in a few seconds", [
    {
      desc: RetryInfoSchema,
      value: create(RetryInfoSchema, { retryAfterSeconds: databaseRetryAfterSeconds, limit: 0, windowSeconds: 0, policy: "database" }),
    },
  ]);
}

/** Counts a rate limit's refusal by its policy's name, which the refusal carries in its RetryInfo. */
function countRefusal(error: DomainError, metrics: Metrics): void {
  if (error.reason !== "rate_limited") return;
  const retry = error.details.find((detail) => detail.desc === RetryInfoSchema);
  metrics.rateLimitRefused((retry?.value as { policy?: string } | undefined)?.policy || "unknown");
}
import { requestIdHeader } from "../../contract/credentials.ts";

/**
 * The one place where failures become Connect errors: domain errors keep their code, reason and
 * message; a database that cannot be reached is `unavailable` with a retry hint (503 and
 * Retry-After at the edge); ORM not-found and constraint errors get the code that fits; anything else becomes
 * `internal` with its message hidden from the caller and logged with its cause. A streaming
 * call's failures arrive while its responses are read, so those are translated there too. Every
 * rate limit's refusal passes here, so this is where they are counted.
 */
export function createErrorInterceptor(logger: Logger, metrics: Metrics): Interceptor {
  const unreachable = throttledWarning(logger, "the database cannot be reached; calls are answered unavailable until it is back");
  const translate = (error: unknown, procedure: string, requestId: string | undefined): ConnectError => {
    if (error instanceof ConnectError) return error;
    if (error instanceof DomainError) {
      countRefusal(error, metrics);
      return error.toConnectError();
    }
    if (isDatabaseUnavailable(error)) {
      unreachable({ err: error, procedure });
      return databaseUnavailable().toConnectError();
    }
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
