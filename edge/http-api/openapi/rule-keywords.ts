/**
 * buf.validate rules as JSON Schema keywords, for request schemas only: what JSON Schema can say
 * becomes keywords, the rest a sentence in `notes` that the caller appends to the description.
 * The rules are checked by the server in any case; the schema only tells clients ahead of time.
 */
import { getExtension, isFieldSet, type DescEnum, type DescField } from "@bufbuild/protobuf";
import {
  KnownRegex,
  MapRulesSchema,
  RepeatedRulesSchema,
  type DurationRules,
  type EnumRules,
  type FieldRules,
  type MapRules,
  type RepeatedRules,
  type StringRules,
  type TimestampRules,
} from "@bufbuild/protovalidate/gen/buf/validate/validate_pb.js";
import { one_line } from "../../../gen/outpost/validate/v1/rules_pb.js";
import { notOnOneLine } from "../../../contract/one-line.ts";
import { oneLineWords, patternWords } from "../../../contract/validation.ts";
import { enumValueName, enumValueNames } from "../json.ts";
import type { JsonSchema } from "./openapi-types.ts";
import { ecmaPattern, enumValuePasses, excludesRange, numericRules, ruleSet, stringRulesSet, type NumericRules } from "./validate-rules.ts";

/**
 * Applies a field's rules for one value (the field itself, or one item of a list or map) to that
 * value's schema, CEL rules included (as notes: JSON Schema cannot run them).
 */
export function applyFieldRules(schema: JsonSchema, rules: FieldRules, notes: string[], field: DescField): void {
  applyValueRules(schema, rules, notes, field);
  for (const rule of rules.cel) notes.push(rule.message ? `${rule.message.replace(/\.?$/, ".")}` : `Checked by the rule "${rule.id}".`);
  if (rules.celExpression.length) notes.push(`Further checks apply to \`${field.jsonName}\`.`);
}

/** A list's own rules (item count and uniqueness) on its array schema. */
export function applyRepeatedRules(schema: JsonSchema, rules: RepeatedRules): void {
  if (isFieldSet(rules, RepeatedRulesSchema.field.minItems)) schema.minItems = Number(rules.minItems);
  if (isFieldSet(rules, RepeatedRulesSchema.field.maxItems)) schema.maxItems = Number(rules.maxItems);
  if (rules.unique) schema.uniqueItems = true;
}

/** A map's own rules (pair count) on its object schema. */
export function applyMapRules(schema: JsonSchema, rules: MapRules): void {
  if (isFieldSet(rules, MapRulesSchema.field.minPairs)) schema.minProperties = Number(rules.minPairs);
  if (isFieldSet(rules, MapRulesSchema.field.maxPairs)) schema.maxProperties = Number(rules.maxPairs);
}

/** The enum's values that a request may name, after the field's enum rules. */
export function allowedEnumNames(desc: DescEnum, rules: EnumRules | undefined): string[] {
  const numbers = desc.values.filter((v) => v.number !== 0).map((v) => v.number);
  const allowed = numbers.filter((n) => !rules || enumValuePasses(rules, n));
  const names = allowed.map((n) => enumValueName(desc, n)!);
  // enumValueNames (json.ts) is what the router accepts; keep its order and never go beyond it.
  return enumValueNames(desc).filter((name) => names.includes(name));
}

/** The rules for one value, by the value's type. */
function applyValueRules(schema: JsonSchema, rules: FieldRules, notes: string[], field: DescField): void {
  const type = rules.type;
  switch (type.case) {
    case "string":
      applyStringRules(schema, type.value, notes, field);
      return;
    case "bool":
      if (ruleSet(rules, "const")) schema.const = type.value.const;
      return;
    case "timestamp":
      notes.push(...timestampNotes(type.value));
      return;
    case "duration":
      notes.push(...durationNotes(type.value));
      return;
    case "bytes":
      notes.push("Has byte-level rules; see the error details when refused.");
      return;
    case "enum":
    case "repeated":
    case "map":
    case "any":
    case "fieldMask":
    case undefined:
      return;
    default: {
      const numeric = numericRules(rules);
      if (numeric) {
        const big = /64$/.test(type.case);
        applyNumericRules(schema, numeric, big, notes);
        if (ruleSet(rules, "const")) schema.const = big ? String(numeric.const) : Number(numeric.const);
      }
    }
  }
}

/** 64-bit integers are strings in protobuf JSON, so their bounds can only be notes. */
function applyNumericRules(schema: JsonSchema, rules: NumericRules, isBig: boolean, notes: string[]): void {
  const value = (v: number | bigint) => (isBig ? String(v) : Number(v));
  if (isBig) {
    const parts: string[] = [];
    if (rules.greaterThan.case) parts.push(`${rules.greaterThan.case === "gt" ? ">" : "≥"} ${rules.greaterThan.value}`);
    if (rules.lessThan.case) parts.push(`${rules.lessThan.case === "lt" ? "<" : "≤"} ${rules.lessThan.value}`);
    if (parts.length) notes.push(`Must be ${parts.join(" and ")}.`);
    if (rules.in.length) schema.enum = rules.in.map(value);
    if (rules.notIn.length) notes.push(`Must not be ${rules.notIn.join(", ")}.`);
    return;
  }
  if (rules.in.length) schema.enum = rules.in.map(value);
  if (rules.notIn.length) schema.not = { enum: rules.notIn.map(value) };
  const lt = rules.lessThan;
  const gt = rules.greaterThan;
  const upper: JsonSchema = lt.case === "lt" ? { exclusiveMaximum: Number(lt.value) } : lt.case === "lte" ? { maximum: Number(lt.value) } : {};
  const lower: JsonSchema = gt.case === "gt" ? { exclusiveMinimum: Number(gt.value) } : gt.case === "gte" ? { minimum: Number(gt.value) } : {};
  if (excludesRange(rules)) {
    schema.anyOf = [lower, upper]; // outside the range
  } else {
    Object.assign(schema, lower, upper);
  }
}

const wellKnownFormats: Record<string, string> = {
  email: "email",
  hostname: "hostname",
  ipv4: "ipv4",
  ipv6: "ipv6",
  uri: "uri",
  uriRef: "uri-reference",
  uuid: "uuid",
};

const wellKnownPatterns: Record<string, string> = {
  tuuid: "^[0-9a-fA-F]{32}$",
  ulid: "^[0-7][0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{25}$",
};

const wellKnownNotes: Record<string, string> = {
  ip: "Must be an IP address (v4 or v6).",
  address: "Must be a hostname or an IP address.",
  ipWithPrefixlen: "Must be an IP address with a prefix length.",
  ipv4WithPrefixlen: "Must be an IPv4 address with a prefix length.",
  ipv6WithPrefixlen: "Must be an IPv6 address with a prefix length.",
  ipPrefix: "Must be an IP prefix.",
  ipv4Prefix: "Must be an IPv4 prefix.",
  ipv6Prefix: "Must be an IPv6 prefix.",
  hostAndPort: "Must be a host and a port.",
  protobufFqn: "Must be a fully-qualified protobuf name.",
  protobufDotFqn: "Must be a fully-qualified protobuf name with a leading dot.",
};

/** "must be one line" → "Must be one line." */
const sentence = (words: string) => `${words[0].toUpperCase()}${words.slice(1).replace(/\.?$/, ".")}`;

/** A second pattern where the schema has one already: both must match. */
function addPattern(schema: JsonSchema, pattern: string): void {
  if (schema.pattern === undefined) schema.pattern = pattern;
  else schema.allOf = [...((schema.allOf as JsonSchema[] | undefined) ?? []), { pattern }];
}

/**
 * String rules on a string's schema (a field's, an item's, or a map's keys'). A field's pattern is
 * also said in the contract's words for it, as the service says it when refusing a value.
 */
export function applyStringRules(schema: JsonSchema, rules: StringRules, notes: string[], field?: DescField): void {
  const set = stringRulesSet(rules);
  if (set("const")) schema.const = rules.const;
  if (set("len")) {
    schema.minLength = Number(rules.len);
    schema.maxLength = Number(rules.len);
  }
  if (set("minLen")) schema.minLength = Number(rules.minLen);
  if (set("maxLen")) schema.maxLength = Number(rules.maxLen);
  if (set("pattern")) {
    if (ecmaPattern(rules.pattern)) schema.pattern = rules.pattern;
    if (field) notes.push(sentence(patternWords(field)));
    else if (!ecmaPattern(rules.pattern)) notes.push(`Must match the RE2 pattern \`${rules.pattern}\`.`);
  }
  if (getExtension(rules, one_line)) {
    addPattern(schema, `^[^${notOnOneLine.source.slice(1, -1)}]*$`);
    notes.push(sentence(oneLineWords));
  }
  if (set("prefix")) notes.push(`Must start with "${rules.prefix}".`);
  if (set("suffix")) notes.push(`Must end with "${rules.suffix}".`);
  if (set("contains")) notes.push(`Must contain "${rules.contains}".`);
  if (set("notContains")) notes.push(`Must not contain "${rules.notContains}".`);
  if (set("lenBytes") || set("minBytes") || set("maxBytes")) {
    const parts = [
      set("lenBytes") && `exactly ${rules.lenBytes}`,
      set("minBytes") && `at least ${rules.minBytes}`,
      set("maxBytes") && `at most ${rules.maxBytes}`,
    ].filter(Boolean);
    notes.push(`UTF-8 length in bytes: ${parts.join(", ")}.`);
  }
  if (rules.in.length) schema.enum = [...rules.in];
  if (rules.notIn.length) schema.not = { enum: [...rules.notIn] };
  const known = rules.wellKnown;
  if (known.case === "wellKnownRegex") {
    if (known.value === KnownRegex.HTTP_HEADER_NAME) notes.push("Must be an HTTP header name.");
    if (known.value === KnownRegex.HTTP_HEADER_VALUE) notes.push("Must be an HTTP header value.");
  } else if (known.case && known.value) {
    if (wellKnownFormats[known.case]) schema.format = wellKnownFormats[known.case];
    else if (wellKnownPatterns[known.case] && !schema.pattern) schema.pattern = wellKnownPatterns[known.case];
    else if (wellKnownNotes[known.case]) notes.push(wellKnownNotes[known.case]);
  }
}

function timestampNotes(rules: TimestampRules): string[] {
  const notes: string[] = [];
  const iso = (t: { seconds: bigint; nanos: number }) => new Date(Number(t.seconds) * 1000 + t.nanos / 1e6).toISOString();
  if (rules.greaterThan.case === "gtNow") notes.push("Must be in the future.");
  if (rules.greaterThan.case === "gt") notes.push(`Must be after ${iso(rules.greaterThan.value)}.`);
  if (rules.greaterThan.case === "gte") notes.push(`Must not be before ${iso(rules.greaterThan.value)}.`);
  if (rules.lessThan.case === "ltNow") notes.push("Must be in the past.");
  if (rules.lessThan.case === "lt") notes.push(`Must be before ${iso(rules.lessThan.value)}.`);
  if (rules.lessThan.case === "lte") notes.push(`Must not be after ${iso(rules.lessThan.value)}.`);
  if (rules.within) notes.push(`Must be within ${durationText(rules.within)} of the current time.`);
  if (rules.const) notes.push(`Must be ${iso(rules.const)}.`);
  return notes;
}

function durationText(d: { seconds: bigint; nanos: number }): string {
  const seconds = Number(d.seconds) + d.nanos / 1e9;
  if (seconds % 86400 === 0) return `${seconds / 86400} days`;
  if (seconds % 3600 === 0) return `${seconds / 3600} hours`;
  return `${seconds} seconds`;
}

function durationNotes(rules: DurationRules): string[] {
  const notes: string[] = [];
  if (rules.greaterThan.case) notes.push(`Must be ${rules.greaterThan.case === "gt" ? "longer than" : "at least"} ${durationText(rules.greaterThan.value)}.`);
  if (rules.lessThan.case) notes.push(`Must be ${rules.lessThan.case === "lt" ? "shorter than" : "at most"} ${durationText(rules.lessThan.value)}.`);
  return notes;
}
