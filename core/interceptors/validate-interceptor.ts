import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import { create, ScalarType, type DescMessage, type Message } from "@bufbuild/protobuf";
import { pathToString } from "@bufbuild/protobuf/reflect";
import { ViolationsSchema } from "@bufbuild/protovalidate/gen/buf/validate/validate_pb.js";
import { violationsToProto, type Violation } from "@bufbuild/protovalidate";
import { createContractValidator, patternWords } from "../../contract/validation.ts";

/** Each violation's message as a person reads it: a pattern's in words. */
function reworded(violations: Violation[]): Violation[] {
  for (const v of violations) {
    if (v.ruleId !== "string.pattern") continue;
    const field = v.field.findLast((e) => e.kind === "field");
    if (field) v.message = patternWords(field);
  }
  return violations;
}

/** One line for the error's message: each violation as "field: what it must be". */
const describe = (violations: readonly Violation[]) => violations.map((v) => `${pathToString(v.field) || "request"}: ${v.message}`).join("; ");

/**
 * The path of the first string field holding a NUL character, which PostgreSQL cannot store in
 * text: refused for every field of every request rather than rule by rule.
 */
function nulStringPath(desc: DescMessage, message: Message, prefix = ""): string | undefined {
  const values = message as unknown as Record<string, unknown>;
  for (const field of desc.fields) {
    const value = field.oneof
      ? (values[field.oneof.localName] as { case?: string; value?: unknown }).case === field.localName
        ? (values[field.oneof.localName] as { value: unknown }).value
        : undefined
      : values[field.localName];
    if (value === undefined) continue;
    const path = prefix + field.name;
    const hasNul = (v: unknown) => typeof v === "string" && v.includes("\u0000");
    switch (field.fieldKind) {
      case "scalar":
        if (field.scalar === ScalarType.STRING && hasNul(value)) return path;
        break;
      case "list":
        if (field.listKind === "scalar" && (value as unknown[]).some(hasNul)) return path;
        if (field.listKind === "message") {
          for (const item of value as Message[]) {
            const found = nulStringPath(field.message, item, `${path}.`);
            if (found) return found;
          }
        }
        break;
      case "map":
        for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
          if (hasNul(key) || hasNul(item)) return path;
          if (field.mapKind === "message") {
            const found = nulStringPath(field.message, item as Message, `${path}.`);
            if (found) return found;
          }
        }
        break;
      case "message": {
        const found = nulStringPath(field.message, value as Message, `${path}.`);
        if (found) return found;
        break;
      }
    }
  }
  return undefined;
}

/**
 * A check of one message against the buf.validate rules in the proto (and the NUL rule above)
 * that throws `invalid_argument` naming each field and, in words, what it must be ("command: must
 * be one line, without control characters or bidirectional text controls"), with a
 * buf.validate.Violations detail. Streaming handlers run it on each message they receive.
 */
export function createMessageCheck(): (desc: DescMessage, message: Message) => void {
  const validator = createContractValidator();
  return (desc, message) => {
    const result = validator.validate(desc, message);
    if (result.kind === "invalid") {
      const [violations, schema] = violationsToProto(reworded(result.violations));
      throw new ConnectError(describe(result.violations), Code.InvalidArgument, undefined, [{ desc: schema, value: violations }]);
    }
    if (result.kind === "error") throw result.error;
    const nul = nulStringPath(desc, message);
    if (nul) {
      // The same detail as the rules' violations, so callers find the field without reading the text.
      const message = "must not contain NUL characters";
      const violations = create(ViolationsSchema, {
        violations: [{ field: { elements: nul.split(".").map((fieldName) => ({ fieldName })) }, message, ruleId: "string.no_nul" }],
      });
      throw new ConnectError(`${nul}: ${message}`, Code.InvalidArgument, undefined, [{ desc: ViolationsSchema, value: violations }]);
    }
  };
}

/**
 * Checks every unary request, the one request of a server-streaming call and each message of a
 * client-streaming one (an upload's pieces) as it arrives, with {@link createMessageCheck}, so
 * that no handler sees input its contract forbids. A bidirectional stream's handler checks its
 * messages itself (the agent's stream, which answers a bad one by ending).
 */
export function createValidateInterceptor(): Interceptor {
  const check = createMessageCheck();
  return (next) => async (req) => {
    if (!req.stream) check(req.method.input, req.message);
    else if (req.method.methodKind !== "bidi_streaming") return next({ ...req, message: checkedEach(req.message, (m) => check(req.method.input, m)) });
    return next(req);
  };
}

/** A call's request stream, each message checked before the handler reads it. */
async function* checkedEach<T>(messages: AsyncIterable<T>, check: (message: T) => void): AsyncIterable<T> {
  for await (const message of messages) {
    check(message);
    yield message;
  }
}
