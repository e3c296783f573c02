/**
 * Reading a field's buf.validate rules, and deciding what they accept: above all, whether a
 * request must carry the field at all (its absence would be refused). The JSON Schema keywords
 * the rules become are in rule-keywords.ts.
 */
import { getOption, hasOption, isFieldSet, type DescField, type Message } from "@bufbuild/protobuf";
import {
  field as fieldRulesExtension,
  Ignore,
  KnownRegex,
  EnumRulesSchema,
  FieldRulesSchema,
  MapRulesSchema,
  RepeatedRulesSchema,
  StringRulesSchema,
  type EnumRules,
  type FieldRules,
  type StringRules,
} from "@bufbuild/protovalidate/gen/buf/validate/validate_pb.js";

/** The field's rules, or undefined when it has none or they are always ignored. */
export function fieldRules(field: DescField): FieldRules | undefined {
  if (!hasOption(field, fieldRulesExtension)) return undefined;
  const rules = getOption(field, fieldRulesExtension);
  return rules.ignore === Ignore.ALWAYS ? undefined : rules;
}

/** Whether the field says on the wire whether it is set (message, oneof member, proto3 optional). */
export function hasPresence(field: DescField): boolean {
  return field.fieldKind === "message" || field.oneof !== undefined || field.proto.proto3Optional === true;
}

/** Must a request carry the field? (Its absence would be refused by the validation rules.) */
export function requiredInRequest(field: DescField, rules: FieldRules | undefined): boolean {
  if (!rules) return false;
  if (rules.required) return true;
  if (hasPresence(field)) return false; // rules apply only when it is set
  if (rules.ignore === Ignore.IF_ZERO_VALUE) return false;
  return zeroValueBreaksRules(field, rules);
}

/** The rules that every numeric type shares (int32 … fixed64, float, double). */
export type NumericRules = {
  const: number | bigint;
  lessThan: { case: "lt" | "lte"; value: number | bigint } | { case: undefined; value?: undefined };
  greaterThan: { case: "gt" | "gte"; value: number | bigint } | { case: undefined; value?: undefined };
  in: Array<number | bigint>;
  notIn: Array<number | bigint>;
};

/** The rules seen through their common numeric shape, or undefined for a non-numeric type. */
export function numericRules(rules: FieldRules): NumericRules | undefined {
  switch (rules.type.case) {
    case "int32":
    case "sint32":
    case "sfixed32":
    case "uint32":
    case "fixed32":
    case "float":
    case "double":
    case "int64":
    case "sint64":
    case "sfixed64":
    case "uint64":
    case "fixed64":
      return rules.type.value as unknown as NumericRules;
    default:
      return undefined;
  }
}

/** Is a proto2 `optional` field of the type's rules message set? (Only set rules apply.) */
export function ruleSet(rules: FieldRules, name: string): boolean {
  const desc = FieldRulesSchema.fields.find((f) => f.localName === rules.type.case)?.message;
  const field = desc?.fields.find((f) => f.name === name);
  return !!field && isFieldSet(rules.type.value as Message, field);
}

/** Which of the string rules are set (a proto2 `optional` rule applies only when set). */
export function stringRulesSet(rules: StringRules): (name: keyof typeof StringRulesSchema.field) => boolean {
  return (name) => isFieldSet(rules, StringRulesSchema.field[name]);
}

/** A JS RegExp for an RE2 pattern, or undefined where the syntaxes part ways. */
export function ecmaPattern(pattern: string): RegExp | undefined {
  try {
    return new RegExp(pattern, "u");
  } catch {
    return undefined;
  }
}

/** Do the bounds exclude a range (e.g. `lt: 0, gt: 10`), accepting what lies outside it? */
export function excludesRange({ lessThan: lt, greaterThan: gt }: NumericRules): boolean {
  return !!lt.case && !!gt.case && Number(gt.value) > Number(lt.value);
}

/** Does a number pass numeric bounds and lists? */
function numberPasses(rules: NumericRules, value: number): boolean {
  if (rules.in.length && !rules.in.some((v) => Number(v) === value)) return false;
  if (rules.notIn.some((v) => Number(v) === value)) return false;
  const lt = rules.lessThan;
  const gt = rules.greaterThan;
  const below = lt.case === "lt" ? value < Number(lt.value) : lt.case === "lte" ? value <= Number(lt.value) : true;
  const above = gt.case === "gt" ? value > Number(gt.value) : gt.case === "gte" ? value >= Number(gt.value) : true;
  return excludesRange(rules) ? below || above : below && above;
}

/** Does an enum value's number pass the enum rules (`const`, `in`, `not_in`)? */
export function enumValuePasses(rules: EnumRules, number: number): boolean {
  if (isFieldSet(rules, EnumRulesSchema.field.const) && rules.const !== number) return false;
  if (rules.in.length && !rules.in.includes(number)) return false;
  return !rules.notIn.includes(number);
}

/** Does the empty string pass string rules? */
function emptyStringPasses(rules: StringRules): boolean {
  const set = stringRulesSet(rules);
  if (set("const") && rules.const !== "") return false;
  if ((set("len") && rules.len > 0n) || (set("minLen") && rules.minLen > 0n)) return false;
  if ((set("lenBytes") && rules.lenBytes > 0n) || (set("minBytes") && rules.minBytes > 0n)) return false;
  if (set("pattern") && ecmaPattern(rules.pattern)?.test("") === false) return false;
  if ((set("prefix") && rules.prefix) || (set("suffix") && rules.suffix) || (set("contains") && rules.contains)) return false;
  if (rules.in.length && !rules.in.includes("")) return false;
  if (rules.notIn.includes("")) return false;
  const known = rules.wellKnown;
  if (known.case === "wellKnownRegex") return known.value !== KnownRegex.HTTP_HEADER_NAME;
  if (known.case && known.value && known.case !== "uriRef") return false;
  return true;
}

/** Does the field's zero value (what an absent implicit field means) break its rules? */
function zeroValueBreaksRules(field: DescField, rules: FieldRules): boolean {
  const type = rules.type;
  switch (field.fieldKind) {
    case "scalar":
      if (type.case === "string") return !emptyStringPasses(type.value);
      if (type.case === "bool") return ruleSet(rules, "const") && type.value.const === true;
      if (type.case === "bytes") return type.value.minLen > 0n || type.value.len > 0n;
      {
        const numeric = numericRules(rules);
        if (!numeric) return false;
        if (ruleSet(rules, "const") && Number(numeric.const) !== 0) return true;
        return !numberPasses(numeric, 0);
      }
    case "enum":
      return type.case === "enum" && !enumValuePasses(type.value, 0);
    case "list":
      return type.case === "repeated" && isFieldSet(type.value, RepeatedRulesSchema.field.minItems) && type.value.minItems > 0n;
    case "map":
      return type.case === "map" && isFieldSet(type.value, MapRulesSchema.field.minPairs) && type.value.minPairs > 0n;
    default:
      return false;
  }
}
