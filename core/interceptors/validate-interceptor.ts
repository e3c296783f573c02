import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { createValidator, violationsToProto } from "@bufbuild/protovalidate";

/**
 * Checks every unary request against the buf.validate rules in the proto, so that no handler
 * sees input its contract forbids. A failure is `invalid_argument` naming each field, with a
 * buf.validate.Violations detail.
 */
export function createValidateInterceptor(): Interceptor {
  const validator = createValidator();
  return (next) => async (req) => {
    if (!req.stream) {
      const result = validator.validate(req.method.input, req.message);
      if (result.kind === "invalid") {
        const [violations, schema] = violationsToProto(result.violations);
        const message = result.violations.map((v) => v.toString()).join("; ");
        throw new ConnectError(message, Code.InvalidArgument, undefined, [{ desc: schema, value: violations }]);
      }
      if (result.kind === "error") throw result.error;
    }
    return next(req);
  };
}
