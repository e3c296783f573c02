import assert from "node:assert/strict";
import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorInfoSchema } from "../../gen/outpost/errors/v1/errors_pb.js";
import { OAuthErrorSchema } from "../../gen/outpost/oauth/v1/oauth_pb.js";

/** Asserts that `promise` fails with this Connect code (and domain reason, when given). */
export async function rejectsWith(promise: Promise<unknown>, code: Code, reason?: string): Promise<ConnectError> {
  try {
    await promise;
  } catch (error) {
    const connectError = ConnectError.from(error);
    assert.equal(Code[connectError.code], Code[code], `expected ${Code[code]}, got ${Code[connectError.code]}: ${connectError.message}`);
    if (reason) {
      const [info] = connectError.findDetails(ErrorInfoSchema);
      assert.equal(info?.reason, reason, `expected reason ${reason}: ${connectError.message}`);
    }
    return connectError;
  }
  assert.fail(`expected the call to fail with ${Code[code]}`);
}

/**
 * How an OAuth call of an issuer's service ended: "ok", or the OAuth error of its refusal (the
 * `OAuthError` detail core refuses with). A failure without that detail is thrown on.
 */
export async function oauthOutcome(call: Promise<unknown>): Promise<string> {
  try {
    await call;
    return "ok";
  } catch (error) {
    const [refused] = ConnectError.from(error).findDetails(OAuthErrorSchema);
    if (!refused) throw error;
    return refused.error;
  }
}
