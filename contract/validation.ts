/**
 * How the contract's validation rules are read: protovalidate with the contract's own rules
 * (proto/outpost/validate/v1/rules.proto), and what each rule asks for in words. Core enforces the
 * rules with this validator; the OpenAPI document describes them with the same words.
 */
import { createRegistry, getOption, type DescField } from "@bufbuild/protobuf";
import { createValidator, type Validator } from "@bufbuild/protovalidate";
import { predefined } from "@bufbuild/protovalidate/gen/buf/validate/validate_pb.js";
import { file_outpost_validate_v1_rules, one_line, pattern_message } from "../gen/outpost/validate/v1/rules_pb.js";

/**
 * protovalidate that knows the contract's own rules (`one_line`): without them it refuses to
 * compile a message that uses one. Everything that checks a message against the contract makes
 * its validator here.
 */
export function createContractValidator(): Validator {
  return createValidator({ registry: createRegistry(file_outpost_validate_v1_rules) });
}

/**
 * What a field's pattern rule asks for, in the words the contract gives it (`pattern_message`),
 * never the regular expression, which tells a person nothing. A list's items share their field's.
 */
export function patternWords(field: DescField): string {
  return getOption(field, pattern_message) || "is not in the expected form";
}

/** What the `one_line` rule asks for, as its violation says it. */
export const oneLineWords = getOption(one_line, predefined).cel[0].message;
