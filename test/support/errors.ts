import assert from "node:assert/strict";
import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorInfoSchema } from "../../gen/outpost/errors/v1/errors_pb.js";

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
