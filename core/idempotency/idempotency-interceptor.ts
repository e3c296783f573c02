/**
 * Idempotency keys: a unary mutation sent with an `Idempotency-Key` header runs at most once per
 * caller and key within {@link idempotencyKeptMs}. The first request claims the key in the
 * database (one insert: of several at once, on any instance, one wins), runs, and keeps its
 * answer; a retry with the key gets that answer, marked by the `Idempotent-Replayed` header,
 * without running; a retry while the first still runs waits for it up to `waitMs`, then is told
 * `idempotency_key_in_flight`; the key sent with another procedure or request is
 * `idempotency_key_reused`. A request refused or failed before it acted (invalid input, no
 * access, the agent offline, the database away) forgets its claim, so its retry runs; one whose
 * outcome is not known (the agent did not answer, an unexpected failure, the caller went away)
 * keeps that error, because running it again could do it twice. Queries (NO_SIDE_EFFECTS) and
 * streams ignore the header: a query's retry is harmless, and a stream's answer is not one message.
 */
import { Code, ConnectError, type Interceptor, type UnaryRequest, type UnaryResponse } from "@connectrpc/connect";
import { create, fromBinary, toBinary, type DescMethodUnary, type Message } from "@bufbuild/protobuf";
import { MethodOptions_IdempotencyLevel } from "@bufbuild/protobuf/wkt";
import { createHash } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { idempotencyKeyHeader, idempotentReplayedHeader } from "../../contract/credentials.ts";
import { callerKey } from "../context.ts";
import type { CoreDeps, IdempotencyOptions } from "../deps.ts";
import { DomainError, fail } from "../errors.ts";
import { isDatabaseUnavailable } from "../db/unavailable.ts";
import type { SqlRunner } from "../db/sql.ts";
import { openFromBytes, sealToBytes } from "../keys/key-encryption.ts";
import { abandonClaim, claimKey, completeClaim, forgetClaim, readClaim, type ClaimRow, type KeyOwner, type StoredError } from "./idempotency-queries.ts";

/** 1–255 characters, each printable ASCII (a space included; the header's ends are trimmed). */
const validKey = /^[\x20-\x7e]{1,255}$/;

/** Codes of failures after which the request may have acted: kept and replayed, never run again. */
const outcomeUnknownCodes = new Set([Code.DeadlineExceeded, Code.Canceled, Code.Internal, Code.Unknown, Code.DataLoss]);

type Deps = Pick<CoreDeps, "orm" | "statements" | "clock" | "keyEncryptionKey" | "logger">;

export function createIdempotencyInterceptor(deps: Deps, options: IdempotencyOptions = {}): Interceptor {
  const { waitMs = 10_000, pollMs = 25, abandonedAfterMs = 10 * 60_000 } = options;
  return (next) => async (req) => {
    if (req.stream || req.method.idempotency === MethodOptions_IdempotencyLevel.NO_SIDE_EFFECTS) return next(req);
    const key = req.header.get(idempotencyKeyHeader);
    const caller = req.contextValues.get(callerKey);
    if (key === null || caller.kind !== "user") return next(req);
    if (!validKey.test(key)) throw fail("invalid_argument", "Idempotency-Key: must be 1 to 255 printable ASCII characters");
    const query = deps.statements.on(deps.orm.em.fork());
    // The credential's, not only the user's: what a session may do, its API key may not (mint
    // keys), and an organization API key is confined to its organization; a replay checks neither.
    const owner = { userId: caller.user.id, credentialId: caller.credential.id };
    const procedure = `${req.method.parent.typeName}/${req.method.name}`;
    const requestHash = requestHashOf(req.method, req.message);
    const deadline = Date.now() + waitMs;
    for (;;) {
      if (await claimKey(query, { ...owner, key, procedure, requestHash, at: deps.clock.now() })) {
        return runClaimed(query, owner, key, () => next(req) as Promise<UnaryResponse>, deps);
      }
      const claim = await readClaim(query, owner, key);
      if (!claim) continue; // the first forgot its claim (it did nothing) just now: claim it again
      // The hash covers the procedure too: the column is there for whoever reads the table.
      if (!claim.request_hash.equals(requestHash)) {
        throw fail("idempotency_key_reused", "this Idempotency-Key was used for a different request; use a new key for a new request");
      }
      if (claim.completed_at)
        return replay(req, claim, () => openFromBytes(deps.keyEncryptionKey(), claim.response!, sealLabel(owner, key), "the kept answer of an idempotency key"));
      const now = deps.clock.now();
      const abandonedBefore = new Date(now.getTime() - abandonedAfterMs);
      if (claim.created_at < abandonedBefore) {
        await abandonClaim(query, owner, key, abandonedBefore, abandonedError, now);
        continue;
      }
      if (Date.now() >= deadline) {
        throw fail("idempotency_key_in_flight", "the first request with this Idempotency-Key is still running; retry in a moment to get its answer");
      }
      await sleep(pollMs);
      // A caller gone away needs no answer: stop asking the database for it.
      if (req.signal.aborted) throw fail("cancelled", "the caller went away");
    }
  };
}

/** What tells a retry from another request with the same key: SHA-256 of the procedure's name and the request in binary. */
export function requestHashOf(method: DescMethodUnary, message: Message): Buffer {
  return createHash("sha256").update(`${method.parent.typeName}/${method.name}\0`).update(toBinary(method.input, message)).digest();
}

/** What a retry of a request whose instance stopped mid-way gets: it may have been done. */
const abandonedError: StoredError = {
  code: Code.DeadlineExceeded,
  message: "the first request with this Idempotency-Key did not finish (its instance stopped); it may have been done",
  details: [detailOf(new DomainError("outcome_unknown", "").toConnectError(), 0)],
};

/** Runs the request whose claim this is, and keeps its answer (or forgets the claim when it did nothing). */
async function runClaimed(query: SqlRunner, owner: KeyOwner, key: string, run: () => Promise<UnaryResponse>, deps: Deps): Promise<UnaryResponse> {
  let res: UnaryResponse;
  try {
    res = await run();
  } catch (error) {
    const kept = keptError(error);
    // A claim left running is abandoned after a while; a failed write here only delays its retries.
    if (kept) await completeClaim(query, owner, key, { error: kept }, deps.clock.now()).catch(() => {});
    else await forgetClaim(query, owner, key).catch(() => {});
    throw error;
  }
  // Sealed: an answer may hold a secret shown once (a new API key, a server's agent key).
  const response = sealToBytes(deps.keyEncryptionKey(), toBinary(res.method.output, res.message), sealLabel(owner, key));
  try {
    await completeClaim(query, owner, key, { response }, deps.clock.now());
  } catch (error) {
    // It was done, so its caller gets the answer; the claim stays running, and its retries are
    // told the outcome is unknown once it is abandoned, never run again.
    deps.logger.warn({ err: error, procedure: `${res.service.typeName}/${res.method.name}` }, "an idempotency key's answer could not be kept");
  }
  return res;
}

/** The error a retry is to get, when the request may have acted; undefined when it surely did nothing. */
function keptError(error: unknown): StoredError | undefined {
  if (isDatabaseUnavailable(error)) return undefined;
  const known = error instanceof DomainError ? error.toConnectError() : error instanceof ConnectError ? error : undefined;
  if (!known) return { code: Code.Internal, message: "the first request with this Idempotency-Key failed; it may have been done", details: [] };
  if (!outcomeUnknownCodes.has(known.code)) return undefined;
  return { code: known.code, message: known.rawMessage, details: known.details.map((_, i) => detailOf(known, i)) };
}

/** A detail of an error as its type name and binary (base64), whichever form it holds. */
function detailOf(error: ConnectError, i: number): StoredError["details"][number] {
  const detail = error.details[i];
  if ("desc" in detail) return { type: detail.desc.typeName, value: Buffer.from(toBinary(detail.desc, create(detail.desc, detail.value))).toString("base64") };
  return { type: detail.type, value: Buffer.from(detail.value).toString("base64") };
}

/** What a kept answer is sealed to: its row, so it opens nowhere else. */
const sealLabel = (owner: KeyOwner, key: string) => `idempotency key ${owner.userId} ${owner.credentialId} ${key}`;

/** The first request's answer, again. */
function replay(req: UnaryRequest, claim: ClaimRow, openResponse: () => Uint8Array): UnaryResponse {
  const header = new Headers({ [idempotentReplayedHeader]: "true" });
  // A handler's answer carries the protocol's headers, which Connect writes as they are; a unary
  // answer's content type is its request's (JSON or binary), so a replay takes it from there.
  const contentType = req.header.get("content-type");
  if (contentType) header.set("content-type", contentType);
  if (claim.error) {
    const stored = claim.error as StoredError;
    const error = new ConnectError(stored.message, stored.code, header);
    // As they arrived at the first caller: each detail's type and binary, read by findDetails.
    error.details.push(...stored.details.map((d) => ({ type: d.type, value: new Uint8Array(Buffer.from(d.value, "base64")) })));
    throw error;
  }
  const message = fromBinary(req.method.output, openResponse());
  return { stream: false, service: req.service, method: req.method, header, message, trailer: new Headers() } as UnaryResponse;
}
