/**
 * The HTTP API's OpenAPI 3.1 document, generated from the same proto descriptors the router walks:
 * a new RPC method appears here with no code. Nothing in it is written per procedure.
 *
 * - every service with an `http_router` option is a tag, every unary method an operation at
 *   /api/http/<router>/<procedure>; NO_SIDE_EFFECTS methods are GETs whose request fields are query
 *   parameters, every other method a POST whose JSON body is the request message;
 * - schemas are protobuf JSON as the API speaks it (json.ts): field names by JSON name, enums by
 *   their short lower-case names, Timestamps as RFC 3339 strings; request schemas refuse unknown
 *   fields and carry the buf.validate rules that JSON Schema can express, response schemas mark
 *   every field that is always present as required;
 * - an operation's summary is the method's name in words; comments in the proto become
 *   descriptions (of tags, operations, schemas and fields) when a descriptor set with source info is
 *   given, because the runtime descriptors in gen/ carry none.
 */
import { fromBinary, getOption, hasOption, isFieldSet, ScalarType } from "@bufbuild/protobuf";
import type { DescEnum, DescField, DescMessage, DescMethod, DescOneof, DescService, Message } from "@bufbuild/protobuf";
import {
  FileDescriptorSetSchema,
  MethodOptions_IdempotencyLevel,
  type DescriptorProto,
  type EnumDescriptorProto,
  type FileDescriptorSet,
} from "@bufbuild/protobuf/wkt";
import {
  field as fieldRulesExtension,
  oneof as oneofRulesExtension,
  Ignore,
  KnownRegex,
  EnumRulesSchema,
  RepeatedRulesSchema,
  MapRulesSchema,
  StringRulesSchema,
  FieldRulesSchema,
  type EnumRules,
  type FieldRules,
  type StringRules,
  type TimestampRules,
  type DurationRules,
} from "@bufbuild/protovalidate/gen/buf/validate/validate_pb.js";
import { httpResponseField, httpRouter, services as contractServices } from "../../contract/services.ts";
import { enumValueNames } from "./json.ts";

// ---------------------------------------------------------------------------------------------
// The shapes this module writes (the parts of OpenAPI 3.1 it uses).

/** A JSON Schema (2020-12 dialect, as OpenAPI 3.1 uses it). */
export type JsonSchema = { [keyword: string]: unknown };

export interface OpenApiParameter {
  name: string;
  in: "query";
  required: boolean;
  description?: string;
  schema: JsonSchema;
  style?: "form";
  explode?: boolean;
}

export interface OpenApiOperation {
  operationId: string;
  tags: string[];
  summary: string;
  description?: string;
  deprecated?: boolean;
  parameters?: OpenApiParameter[];
  requestBody?: { required: boolean; content: { "application/json": { schema: JsonSchema } } };
  responses: { [status: string]: unknown };
  /** The Connect procedure behind the operation, e.g. "outpost.servers.v1.ServersService/ListServers". */
  "x-connect-procedure": string;
}

export interface OpenApiDocument {
  openapi: "3.1.0";
  info: { title: string; version: string; description: string };
  servers: Array<{ url: string }>;
  security: Array<{ [scheme: string]: string[] }>;
  tags: Array<{ name: string; description?: string }>;
  paths: { [path: string]: { get?: OpenApiOperation; post?: OpenApiOperation } };
  components: {
    schemas: { [name: string]: JsonSchema };
    responses: { [name: string]: unknown };
    headers: { [name: string]: unknown };
    securitySchemes: { [name: string]: unknown };
  };
}

export interface OpenApiOptions {
  /** The public origin the API is served on (ACCOUNT_BASE_URL). */
  serverUrl: string;
  /** The API's version (package.json's). */
  version: string;
  /** The services to describe; those without http_router are left out. Default: the contract's. */
  services?: readonly DescService[];
  /**
   * A FileDescriptorSet (or a buf image, e.g. `buf build -o outpost.binpb`) that keeps source info:
   * its comments become summaries and descriptions. Without it the summaries come from names.
   */
  sourceInfo?: Uint8Array | FileDescriptorSet;
}

/** Where the API lives; the router, the docs and the document agree on it. */
export const httpApiBasePath = "/api/http";

// ---------------------------------------------------------------------------------------------
// Comments, from a descriptor set with source info (paths as in descriptor.proto's SourceCodeInfo).

type Comments = Map<string, string>;

/** A comment's text: the space after `//` dropped, wrapped lines joined (lists and blank lines kept). */
function cleanComment(text: string): string {
  const lines = text.replace(/\r\n?/g, "\n").split("\n").map((line) => (line.startsWith(" ") ? line.slice(1) : line));
  return lines
    .join("\n")
    .trim()
    .replace(/([^\n])\n(?![\n\s*+-]|\d+\.)/g, "$1 ");
}

/** Comments keyed by "<kind>:<full name>": m message, f field, o oneof, e enum, v enum value, s service, r method. */
function indexComments(set: FileDescriptorSet): Comments {
  const comments: Comments = new Map();
  for (const file of set.file) {
    const byPath = new Map<string, string>();
    for (const location of file.sourceCodeInfo?.location ?? []) {
      const text = cleanComment(location.leadingComments || location.trailingComments || "");
      if (text) byPath.set(location.path.join(","), text);
    }
    const put = (key: string, path: number[]) => {
      const text = byPath.get(path.join(","));
      if (text) comments.set(key, text);
    };
    const prefix = file.package ? `${file.package}.` : "";
    const walkEnum = (e: EnumDescriptorProto, name: string, path: number[]) => {
      put(`e:${name}`, path);
      e.value.forEach((v, i) => put(`v:${name}.${v.name}`, [...path, 2, i]));
    };
    const walkMessage = (m: DescriptorProto, name: string, path: number[]) => {
      put(`m:${name}`, path);
      m.field.forEach((f, i) => put(`f:${name}.${f.name}`, [...path, 2, i]));
      m.oneofDecl.forEach((o, i) => put(`o:${name}.${o.name}`, [...path, 8, i]));
      m.nestedType.forEach((n, i) => walkMessage(n, `${name}.${n.name}`, [...path, 3, i]));
      m.enumType.forEach((n, i) => walkEnum(n, `${name}.${n.name}`, [...path, 4, i]));
    };
    file.messageType.forEach((m, i) => walkMessage(m, prefix + m.name, [4, i]));
    file.enumType.forEach((e, i) => walkEnum(e, prefix + e.name, [5, i]));
    file.service.forEach((s, i) => {
      put(`s:${prefix}${s.name}`, [6, i]);
      s.method.forEach((m, j) => put(`r:${prefix}${s.name}.${m.name}`, [6, i, 2, j]));
    });
  }
  return comments;
}

// ---------------------------------------------------------------------------------------------
// Small helpers.

/** "RegenerateAgentKey" → "Regenerate agent key". */
function words(name: string): string {
  const acronyms: Record<string, string> = { api: "API", id: "ID", ids: "IDs", oauth: "OAuth", url: "URL" };
  const parts = name.match(/[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+/g) ?? [name];
  return parts
    .map((part, i) => {
      const lower = part.toLowerCase();
      if (acronyms[lower]) return acronyms[lower];
      return i === 0 ? lower.charAt(0).toUpperCase() + lower.slice(1) : lower;
    })
    .join(" ");
}

function joinText(...parts: Array<string | undefined>): string | undefined {
  const text = parts.filter((p): p is string => !!p && p.length > 0).join("\n\n");
  return text || undefined;
}

function num(value: bigint | number): number {
  return Number(value);
}

function isQuery(method: DescMethod): boolean {
  return method.idempotency === MethodOptions_IdempotencyLevel.NO_SIDE_EFFECTS;
}

function fieldRules(field: DescField): FieldRules | undefined {
  if (!hasOption(field, fieldRulesExtension)) return undefined;
  const rules = getOption(field, fieldRulesExtension);
  return rules.ignore === Ignore.ALWAYS ? undefined : rules;
}

/** Whether the field says on the wire whether it is set (message, oneof member, proto3 optional). */
function hasPresence(field: DescField): boolean {
  return field.fieldKind === "message" || field.oneof !== undefined || field.proto.proto3Optional === true;
}

/** The API name of an enum value. */
function enumName(desc: DescEnum, number: number): string | undefined {
  return desc.values.find((v) => v.number === number)?.localName.toLowerCase();
}

/** A JS RegExp for an RE2 pattern, or undefined where the syntaxes part ways. */
function ecmaPattern(pattern: string): RegExp | undefined {
  try {
    return new RegExp(pattern, "u");
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------------------------------------
// Scalars and well-known types as protobuf JSON.

function scalarSchema(type: ScalarType): JsonSchema {
  switch (type) {
    case ScalarType.STRING:
      return { type: "string" };
    case ScalarType.BOOL:
      return { type: "boolean" };
    case ScalarType.BYTES:
      return { type: "string", contentEncoding: "base64" };
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
      return { type: "integer", format: "int32" };
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return { type: "integer", minimum: 0, maximum: 4294967295 };
    case ScalarType.FLOAT:
      return { type: "number", format: "float" };
    case ScalarType.DOUBLE:
      return { type: "number", format: "double" };
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      // protobuf JSON writes 64-bit integers as decimal strings.
      return { type: "string", format: "int64", pattern: "^-?[0-9]+$" };
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return { type: "string", format: "uint64", pattern: "^[0-9]+$" };
  }
}

/** The protobuf JSON form of a google.protobuf type, or undefined for any other message. */
function wellKnownSchema(desc: DescMessage): JsonSchema | undefined {
  switch (desc.typeName) {
    case "google.protobuf.Timestamp":
      return { type: "string", format: "date-time" };
    case "google.protobuf.Duration":
      return { type: "string", pattern: "^-?[0-9]+(\\.[0-9]{1,9})?s$", description: 'Seconds with an "s" suffix, e.g. "1.5s".' };
    case "google.protobuf.FieldMask":
      return { type: "string", description: "Comma-separated field paths (lowerCamelCase)." };
    case "google.protobuf.Struct":
      return { type: "object", additionalProperties: true };
    case "google.protobuf.Value":
      return {};
    case "google.protobuf.ListValue":
      return { type: "array", items: {} };
    case "google.protobuf.Empty":
      return { type: "object", additionalProperties: false };
    case "google.protobuf.Any":
      return { type: "object", properties: { "@type": { type: "string" } }, required: ["@type"], additionalProperties: true };
    case "google.protobuf.DoubleValue":
      return scalarSchema(ScalarType.DOUBLE);
    case "google.protobuf.FloatValue":
      return scalarSchema(ScalarType.FLOAT);
    case "google.protobuf.Int64Value":
      return scalarSchema(ScalarType.INT64);
    case "google.protobuf.UInt64Value":
      return scalarSchema(ScalarType.UINT64);
    case "google.protobuf.Int32Value":
      return scalarSchema(ScalarType.INT32);
    case "google.protobuf.UInt32Value":
      return scalarSchema(ScalarType.UINT32);
    case "google.protobuf.BoolValue":
      return scalarSchema(ScalarType.BOOL);
    case "google.protobuf.StringValue":
      return scalarSchema(ScalarType.STRING);
    case "google.protobuf.BytesValue":
      return scalarSchema(ScalarType.BYTES);
    default:
      return desc.typeName.startsWith("google.protobuf.") ? {} : undefined;
  }
}

// ---------------------------------------------------------------------------------------------
// buf.validate rules → JSON Schema keywords (requests only), with a note for what it cannot say.

type NumericRules = {
  const: number | bigint;
  lessThan: { case: "lt" | "lte"; value: number | bigint } | { case: undefined; value?: undefined };
  greaterThan: { case: "gt" | "gte"; value: number | bigint } | { case: undefined; value?: undefined };
  in: Array<number | bigint>;
  notIn: Array<number | bigint>;
};

function numericRules(rules: FieldRules): NumericRules | undefined {
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

/** Is a proto2 `optional` field of a rules message set? (Only set rules apply.) */
function ruleSet(rules: FieldRules, name: string): boolean {
  const desc = FieldRulesSchema.fields.find((f) => f.localName === rules.type.case)?.message;
  const field = desc?.fields.find((f) => f.name === name);
  return !!field && isFieldSet(rules.type.value as Message, field);
}

function applyNumericRules(schema: JsonSchema, rules: NumericRules, isBig: boolean, notes: string[]): void {
  const value = (v: number | bigint) => (isBig ? String(v) : num(v));
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
  const upper: JsonSchema = lt.case === "lt" ? { exclusiveMaximum: num(lt.value) } : lt.case === "lte" ? { maximum: num(lt.value) } : {};
  const lower: JsonSchema = gt.case === "gt" ? { exclusiveMinimum: num(gt.value) } : gt.case === "gte" ? { minimum: num(gt.value) } : {};
  if (lt.case && gt.case && num(gt.value) > num(lt.value)) {
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

function applyStringRules(schema: JsonSchema, rules: StringRules, notes: string[]): void {
  const set = (name: keyof typeof StringRulesSchema.field) => isFieldSet(rules, StringRulesSchema.field[name]);
  if (set("const")) schema.const = rules.const;
  if (set("len")) {
    schema.minLength = num(rules.len);
    schema.maxLength = num(rules.len);
  }
  if (set("minLen")) schema.minLength = num(rules.minLen);
  if (set("maxLen")) schema.maxLength = num(rules.maxLen);
  if (set("pattern")) {
    if (ecmaPattern(rules.pattern)) schema.pattern = rules.pattern;
    else notes.push(`Must match the RE2 pattern \`${rules.pattern}\`.`);
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

/** Does the empty string pass string rules? */
function emptyStringPasses(rules: StringRules): boolean {
  const set = (name: keyof typeof StringRulesSchema.field) => isFieldSet(rules, StringRulesSchema.field[name]);
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

/** The enum's values that a request may name, after the field's enum rules. */
function allowedEnumNames(desc: DescEnum, rules: EnumRules | undefined): string[] {
  const numbers = desc.values.filter((v) => v.number !== 0).map((v) => v.number);
  const allowed = numbers.filter((n) => {
    if (!rules) return true;
    if (isFieldSet(rules, EnumRulesSchema.field.const) && rules.const !== n) return false;
    if (rules.in.length && !rules.in.includes(n)) return false;
    return !rules.notIn.includes(n);
  });
  const names = allowed.map((n) => enumName(desc, n)!);
  // enumValueNames (json.ts) is what the router accepts; keep its order and never go beyond it.
  return enumValueNames(desc).filter((name) => names.includes(name));
}

function zeroEnumPasses(rules: EnumRules): boolean {
  if (isFieldSet(rules, EnumRulesSchema.field.const) && rules.const !== 0) return false;
  if (rules.in.length && !rules.in.includes(0)) return false;
  return !rules.notIn.includes(0);
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

/** Applies the rules for one value (a singular field, or one item of a list or map) to its schema. */
function applyValueRules(schema: JsonSchema, rules: FieldRules, notes: string[]): void {
  const type = rules.type;
  switch (type.case) {
    case "string":
      applyStringRules(schema, type.value, notes);
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
        if (ruleSet(rules, "const")) schema.const = big ? String(numeric.const) : num(numeric.const);
      }
    }
  }
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
        if (ruleSet(rules, "const") && num(numeric.const) !== 0) return true;
        return !numberPasses(numeric, 0);
      }
    case "enum":
      return type.case === "enum" && !zeroEnumPasses(type.value);
    case "list":
      return type.case === "repeated" && isFieldSet(type.value, RepeatedRulesSchema.field.minItems) && type.value.minItems > 0n;
    case "map":
      return type.case === "map" && isFieldSet(type.value, MapRulesSchema.field.minPairs) && type.value.minPairs > 0n;
    default:
      return false;
  }
}

/** Does a number pass numeric bounds and lists? */
function numberPasses(rules: NumericRules, value: number): boolean {
  if (rules.in.length && !rules.in.some((v) => num(v) === value)) return false;
  if (rules.notIn.some((v) => num(v) === value)) return false;
  const lt = rules.lessThan;
  const gt = rules.greaterThan;
  const below = lt.case === "lt" ? value < num(lt.value) : lt.case === "lte" ? value <= num(lt.value) : true;
  const above = gt.case === "gt" ? value > num(gt.value) : gt.case === "gte" ? value >= num(gt.value) : true;
  if (lt.case && gt.case && num(gt.value) > num(lt.value)) return below || above;
  return below && above;
}

/** Must a request carry the field? (Its absence would be refused by the validation rules.) */
function requiredInRequest(field: DescField, rules: FieldRules | undefined): boolean {
  if (!rules) return false;
  if (rules.required) return true;
  if (hasPresence(field)) return false; // rules apply only when it is set
  if (rules.ignore === Ignore.IF_ZERO_VALUE) return false;
  return zeroValueBreaksRules(field, rules);
}

// ---------------------------------------------------------------------------------------------
// The generator.

type Direction = "request" | "response";

class Generator {
  readonly schemas = new Map<string, JsonSchema>();
  private readonly outputMessages = new Set<string>();

  private readonly comments: Comments;

  constructor(comments: Comments) {
    this.comments = comments;
  }

  comment(key: string): string | undefined {
    return this.comments.get(key);
  }

  /** Records every message a response can contain, so that request variants get their own names. */
  collectOutputs(desc: DescMessage): void {
    if (this.outputMessages.has(desc.typeName) || wellKnownSchema(desc)) return;
    this.outputMessages.add(desc.typeName);
    for (const field of desc.fields) {
      if (field.fieldKind === "message" || (field.fieldKind === "list" && field.listKind === "message") || (field.fieldKind === "map" && field.mapKind === "message")) {
        this.collectOutputs(field.message!);
      }
    }
  }

  componentName(desc: DescMessage, direction: Direction): string {
    return direction === "request" && this.outputMessages.has(desc.typeName) ? `${desc.typeName}Input` : desc.typeName;
  }

  /** A $ref to the message's component, made on first use. */
  messageRef(desc: DescMessage, direction: Direction): JsonSchema {
    const wkt = wellKnownSchema(desc);
    if (wkt) return { ...wkt };
    const name = this.componentName(desc, direction);
    if (!this.schemas.has(name)) {
      this.schemas.set(name, {}); // reserved first: messages may be recursive
      this.schemas.set(name, this.messageSchema(desc, direction));
    }
    return { $ref: `#/components/schemas/${name}` };
  }

  /** Response enums are components holding every value ("unspecified" included). */
  enumRef(desc: DescEnum): JsonSchema {
    if (desc.typeName === "google.protobuf.NullValue") return { type: "null" };
    const name = desc.typeName;
    if (!this.schemas.has(name)) {
      const described = desc.values
        .map((v) => {
          const text = this.comment(`v:${desc.typeName}.${v.name}`);
          return text ? `- \`${v.localName.toLowerCase()}\`: ${text.replace(/\s*\n\s*/g, " ")}` : undefined;
        })
        .filter(Boolean);
      this.schemas.set(name, {
        type: "string",
        enum: desc.values.map((v) => v.localName.toLowerCase()),
        ...(joinText(this.comment(`e:${desc.typeName}`), described.join("\n")) && {
          description: joinText(this.comment(`e:${desc.typeName}`), described.join("\n")),
        }),
      });
    }
    return { $ref: `#/components/schemas/${name}` };
  }

  /** Request enums are inline: the names a request may use, after the field's rules. */
  requestEnum(desc: DescEnum, rules: EnumRules | undefined): JsonSchema {
    if (desc.typeName === "google.protobuf.NullValue") return { type: "null" };
    return { type: "string", enum: allowedEnumNames(desc, rules) };
  }

  /** The schema of one value of the field's type (one item, for a list or a map). */
  private valueSchema(field: DescField, direction: Direction, rules: FieldRules | undefined): JsonSchema {
    const enumRules = rules?.type.case === "enum" ? rules.type.value : undefined;
    switch (field.fieldKind) {
      case "scalar":
        return scalarSchema(field.scalar);
      case "enum":
        return direction === "request" ? this.requestEnum(field.enum, enumRules) : this.enumRef(field.enum);
      case "message":
        return this.messageRef(field.message, direction);
      case "list":
        if (field.listKind === "scalar") return scalarSchema(field.scalar);
        if (field.listKind === "enum") return direction === "request" ? this.requestEnum(field.enum, enumRules) : this.enumRef(field.enum);
        return this.messageRef(field.message, direction);
      case "map":
        if (field.mapKind === "scalar") return scalarSchema(field.scalar);
        if (field.mapKind === "enum") return direction === "request" ? this.requestEnum(field.enum, enumRules) : this.enumRef(field.enum);
        return this.messageRef(field.message, direction);
    }
  }

  /** A field's schema with its rules (requests) and its comment. */
  fieldSchema(field: DescField, direction: Direction): JsonSchema {
    const rules = direction === "request" ? fieldRules(field) : undefined;
    const notes: string[] = [];
    let schema: JsonSchema;
    if (field.fieldKind === "list") {
      const itemRules = rules?.type.case === "repeated" ? rules.type.value.items : undefined;
      const items = this.valueSchema(field, direction, itemRules ?? rules);
      if (itemRules) this.applyRules(items, itemRules, notes, field);
      schema = { type: "array", items };
      if (rules?.type.case === "repeated") {
        const repeated = rules.type.value;
        if (isFieldSet(repeated, RepeatedRulesSchema.field.minItems)) schema.minItems = num(repeated.minItems);
        if (isFieldSet(repeated, RepeatedRulesSchema.field.maxItems)) schema.maxItems = num(repeated.maxItems);
        if (repeated.unique) schema.uniqueItems = true;
      }
    } else if (field.fieldKind === "map") {
      const valueRules = rules?.type.case === "map" ? rules.type.value.values : undefined;
      const keyRules = rules?.type.case === "map" ? rules.type.value.keys : undefined;
      const values = this.valueSchema(field, direction, valueRules);
      if (valueRules) this.applyRules(values, valueRules, notes, field);
      schema = { type: "object", additionalProperties: values };
      if (field.mapKey !== ScalarType.STRING) {
        schema.propertyNames = field.mapKey === ScalarType.BOOL ? { enum: ["true", "false"] } : { pattern: "^-?[0-9]+$" };
      } else if (keyRules?.type.case === "string") {
        const keys: JsonSchema = {};
        applyStringRules(keys, keyRules.type.value, notes);
        if (Object.keys(keys).length) schema.propertyNames = keys;
      }
      if (rules?.type.case === "map") {
        const map = rules.type.value;
        if (isFieldSet(map, MapRulesSchema.field.minPairs)) schema.minProperties = num(map.minPairs);
        if (isFieldSet(map, MapRulesSchema.field.maxPairs)) schema.maxProperties = num(map.maxPairs);
      }
    } else {
      schema = this.valueSchema(field, direction, rules);
      if (rules) this.applyRules(schema, rules, notes, field);
    }
    const description = joinText(
      this.comment(`f:${field.parent.typeName}.${field.name}`),
      field.oneof ? `One of \`${field.oneof.name}\`: at most one of ${field.oneof.fields.map((f) => `\`${f.jsonName}\``).join(", ")} may be set.` : undefined,
      notes.join(" ") || undefined,
    );
    if (description) schema.description = schema.description ? `${description}\n\n${schema.description}` : description;
    if (field.deprecated) schema.deprecated = true;
    return schema;
  }

  private applyRules(schema: JsonSchema, rules: FieldRules, notes: string[], field: DescField): void {
    applyValueRules(schema, rules, notes);
    for (const rule of rules.cel) notes.push(rule.message ? `${rule.message.replace(/\.?$/, ".")}` : `Checked by the rule "${rule.id}".`);
    if (rules.celExpression.length) notes.push(`Further checks apply to \`${field.jsonName}\`.`);
  }

  /** A message's schema: every field by its JSON name. */
  messageSchema(desc: DescMessage, direction: Direction): JsonSchema {
    const properties: { [name: string]: JsonSchema } = {};
    const required: string[] = [];
    for (const field of desc.fields) {
      properties[field.jsonName] = this.fieldSchema(field, direction);
      if (direction === "response" ? !hasPresence(field) : requiredInRequest(field, fieldRules(field))) required.push(field.jsonName);
    }
    const schema: JsonSchema = { type: "object", properties };
    if (required.length) schema.required = required;
    if (direction === "request") {
      schema.additionalProperties = false;
      this.applyOneofs(schema, desc.oneofs);
    }
    const description = this.comment(`m:${desc.typeName}`);
    if (description) schema.description = description;
    return schema;
  }

  /** At most one member of each oneof may be set; a required oneof needs exactly one. */
  private applyOneofs(schema: JsonSchema, oneofs: readonly DescOneof[]): void {
    const dependent: { [name: string]: JsonSchema } = {};
    const notes: string[] = [];
    for (const oneof of oneofs) {
      const names = oneof.fields.map((f) => f.jsonName);
      if (names.length > 1) {
        for (const name of names) {
          const others = names.filter((n) => n !== name);
          dependent[name] = { not: others.length === 1 ? { required: others } : { anyOf: others.map((o) => ({ required: [o] })) } };
        }
      }
      if (hasOption(oneof, oneofRulesExtension) && getOption(oneof, oneofRulesExtension).required) {
        notes.push(`Exactly one of ${names.map((n) => `\`${n}\``).join(", ")} must be set.`);
      }
    }
    if (Object.keys(dependent).length) schema.dependentSchemas = dependent;
    if (notes.length) schema.description = joinText(schema.description as string | undefined, notes.join(" "));
  }

  /** GET: one query parameter per field that a query string can carry (as the router decodes it). */
  queryParameters(desc: DescMessage): { parameters: OpenApiParameter[]; skipped: string[] } {
    const parameters: OpenApiParameter[] = [];
    const skipped: string[] = [];
    for (const field of desc.fields) {
      const carried =
        field.fieldKind === "scalar" ||
        field.fieldKind === "enum" ||
        (field.fieldKind === "message" && field.message.typeName === "google.protobuf.Timestamp") ||
        (field.fieldKind === "list" && field.listKind !== "message");
      if (!carried) {
        skipped.push(field.jsonName);
        continue;
      }
      const schema = this.fieldSchema(field, "request");
      const { description, ...rest } = schema;
      const parameter: OpenApiParameter = {
        name: field.jsonName,
        in: "query",
        required: requiredInRequest(field, fieldRules(field)),
        ...(typeof description === "string" && { description }),
        schema: rest,
      };
      if (field.fieldKind === "list") {
        parameter.style = "form";
        parameter.explode = true;
      }
      parameters.push(parameter);
    }
    return { parameters, skipped };
  }
}

// ---------------------------------------------------------------------------------------------
// Errors, security and the document.

const errorResponses = {
  "400": {
    name: "BadRequest",
    text: "The input is invalid: a malformed body or parameter, an unknown field, or a validation rule. `details` names the fields.",
    example: { code: "invalid_argument", status: 400, message: "validation failed", details: [{ field: "slug", message: "value length must be at least 3 characters", rule: "string.min_len" }] },
  },
  "401": {
    name: "Unauthorized",
    text: "No credential, or an unknown, expired or revoked one (agent keys and Bearer tokens are refused too).",
    example: { code: "unauthenticated", status: 401, message: "sign in or send an API key in the X-API-Key header" },
  },
  "403": {
    name: "Forbidden",
    text: "The caller may not do this: membership, role, server grant or platform admin; also a cross-site request made with the session cookie.",
    example: { code: "permission_denied", status: 403, message: "only an owner or an admin may do this" },
  },
  "404": {
    name: "NotFound",
    text: "No such procedure, or a resource that does not exist or that the caller cannot see.",
    example: { code: "not_found", status: 404, message: "no such organization" },
  },
  "409": {
    name: "Conflict",
    text: "The resource's state does not allow it (already exists, the last owner, a plan limit: `reason` says which).",
    example: { code: "failed_precondition", status: 409, message: "the plan allows 3 servers", reason: "plan_limit_reached" },
  },
  "413": {
    name: "PayloadTooLarge",
    text: "The JSON body is too large.",
    example: { code: "payload_too_large", status: 413, message: "the body is larger than 65536 bytes" },
  },
  "415": {
    name: "UnsupportedMediaType",
    text: "The body is not sent as `application/json`.",
    example: { code: "unsupported_media_type", status: 415, message: "send the input as a JSON object with Content-Type: application/json" },
  },
  "429": {
    name: "TooManyRequests",
    text: "Rate limited: try again after `Retry-After` seconds.",
    example: { code: "resource_exhausted", status: 429, message: "too many requests", reason: "rate_limited" },
  },
  "500": {
    name: "InternalError",
    text: "The request failed. The answer says nothing more; quote `requestId` when reporting it.",
    example: { code: "internal", status: 500, message: "the request failed; quote the request id when reporting it", requestId: "8f14e45f-ceea-467f-a0e6-7c2b1c5d9a3e" },
  },
} as const;

const queryErrorStatuses = ["400", "401", "403", "404", "409", "429", "500"] as const;
const mutationErrorStatuses = ["400", "401", "403", "404", "409", "413", "415", "429", "500"] as const;

function components(): Pick<OpenApiDocument["components"], "responses" | "headers" | "securitySchemes"> & { schemas: { [name: string]: JsonSchema } } {
  const schemas: { [name: string]: JsonSchema } = {
    Error: {
      type: "object",
      description: "Every error of the HTTP API.",
      properties: {
        code: {
          type: "string",
          description:
            "The error's code: a Connect code in snake_case (`invalid_argument`, `unauthenticated`, `permission_denied`, `not_found`, `already_exists`, `failed_precondition`, `resource_exhausted`, `internal`, …) or, for what the edge decides itself, `method_not_allowed`, `payload_too_large` or `unsupported_media_type`.",
        },
        status: { type: "integer", description: "The HTTP status, repeated." },
        message: { type: "string", description: "What went wrong, for people; do not parse it." },
        reason: { type: "string", description: 'A stable snake_case reason to branch on, e.g. "plan_limit_reached".' },
        requestId: { type: "string", description: "The request's id (also the `x-request-id` header), on a 5xx." },
        details: { type: "array", description: "The fields that failed validation.", items: { $ref: "#/components/schemas/FieldViolation" } },
      },
      required: ["code", "status", "message"],
    },
    FieldViolation: {
      type: "object",
      properties: {
        field: { type: "string", description: "The field's path by JSON names, e.g. `slug`." },
        message: { type: "string" },
        rule: { type: "string", description: "The id of the rule it broke, e.g. `string.max_len`." },
      },
      required: ["field", "message"],
    },
  };
  const json = (description: string, example: object, extra: object = {}) => ({
    description,
    ...extra,
    content: { "application/json": { schema: { $ref: "#/components/schemas/Error" }, example } },
  });
  const responses: { [name: string]: unknown } = {};
  for (const [status, { name, text, example }] of Object.entries(errorResponses)) {
    responses[name] =
      status === "429"
        ? json(text, example, {
            headers: {
              "Retry-After": { $ref: "#/components/headers/Retry-After" },
              "RateLimit-Policy": { $ref: "#/components/headers/RateLimit-Policy" },
              RateLimit: { $ref: "#/components/headers/RateLimit" },
            },
          })
        : json(text, example);
  }
  return {
    schemas,
    responses,
    headers: {
      "Retry-After": { description: "Seconds to wait before trying again.", required: true, schema: { type: "integer", minimum: 1 } },
      "RateLimit-Policy": { description: 'The limit that applies, e.g. `"default";q=600;w=60` (draft-ietf-httpapi-ratelimit-headers).', schema: { type: "string" } },
      RateLimit: { description: 'What is left of it, e.g. `"default";r=0;t=42`.', schema: { type: "string" } },
    },
    securitySchemes: {
      apiKey: { type: "apiKey", in: "header", name: "X-API-Key", description: "A user API key (`opk_…`), acting with its user's access." },
      session: {
        type: "apiKey",
        in: "cookie",
        name: "outpost_session",
        description: "The dashboard session cookie, set by `POST /sign-in`. Cross-site requests made with it are refused.",
      },
    },
  };
}

const infoDescription = [
  "Outpost's HTTP API, generated from its RPC services.",
  "",
  "- Procedures that only read are `GET /api/http/<router>/<procedure>` with query parameters (a repeated field repeats its key); every other procedure is a `POST` with a JSON object as its body. The answer is the JSON result itself, with no envelope.",
  "- Field names are lowerCamelCase; enums are short lower-case names (`minecraft`); timestamps are RFC 3339 strings; ids are strings. Unknown fields are refused.",
  "- Authenticate with exactly one credential: a user API key in `X-API-Key`, or the dashboard session cookie. Both at once is a 400; keys in the URL are refused.",
  "- Errors are `{code, status, message}` (plus `reason`, and `details` for validation). Limits are per credential; a 429 says when to try again.",
].join("\n");

/** The OpenAPI 3.1 document of the HTTP API. Pure: the same descriptors give the same document. */
export function createOpenApiDocument(options: OpenApiOptions): OpenApiDocument {
  const sourceInfo = options.sourceInfo instanceof Uint8Array ? fromBinary(FileDescriptorSetSchema, options.sourceInfo) : options.sourceInfo;
  const generator = new Generator(sourceInfo ? indexComments(sourceInfo) : new Map());
  const exposed = (options.services ?? contractServices)
    .map((service) => ({ service, router: httpRouter(service) }))
    .filter((s): s is { service: DescService; router: string } => s.router !== undefined);

  const unary = (service: DescService) => service.methods.filter((m) => m.methodKind === "unary");
  for (const { service } of exposed) {
    for (const method of unary(service)) generator.collectOutputs(method.output);
  }

  const paths: OpenApiDocument["paths"] = {};
  const tags: OpenApiDocument["tags"] = [];
  for (const { service, router } of exposed) {
    const serviceComment = generator.comment(`s:${service.typeName}`);
    tags.push({ name: router, description: serviceComment ?? `${service.name} (\`${service.typeName}\`).` });
    for (const method of unary(service)) {
      const comment = generator.comment(`r:${service.typeName}.${method.name}`);
      const query = isQuery(method);
      const operation: OpenApiOperation = {
        operationId: `${router}.${method.localName}`,
        tags: [router],
        // The name in words: short, and the same with or without comments; the comment describes.
        summary: words(method.name),
        responses: {},
        "x-connect-procedure": `${service.typeName}/${method.name}`,
      };
      let description = comment;
      if (query) {
        const { parameters, skipped } = generator.queryParameters(method.input);
        if (parameters.length) operation.parameters = parameters;
        if (skipped.length) description = joinText(description, `Not settable in a query string: ${skipped.map((s) => `\`${s}\``).join(", ")}.`);
      } else {
        const schema = generator.messageRef(method.input, "request");
        const hasRequired = method.input.fields.some((f) => requiredInRequest(f, fieldRules(f)));
        operation.requestBody = { required: hasRequired, content: { "application/json": { schema } } };
      }
      if (description) operation.description = description;
      if (method.deprecated) operation.deprecated = true;

      operation.responses["200"] = {
        description: "Success.",
        content: { "application/json": { schema: responseSchema(generator, method) } },
      };
      for (const status of query ? queryErrorStatuses : mutationErrorStatuses) {
        operation.responses[status] = { $ref: `#/components/responses/${errorResponses[status].name}` };
      }
      paths[`${httpApiBasePath}/${router}/${method.localName}`] = query ? { get: operation } : { post: operation };
    }
  }

  const fixed = components();
  const schemas: { [name: string]: JsonSchema } = { ...fixed.schemas };
  for (const name of [...generator.schemas.keys()].sort()) schemas[name] = generator.schemas.get(name)!;

  return {
    openapi: "3.1.0",
    info: { title: "Outpost HTTP API", version: options.version, description: infoDescription },
    servers: [{ url: options.serverUrl.replace(/\/+$/, "") }],
    security: [{ apiKey: [] }, { session: [] }],
    tags,
    paths,
    components: { ...fixed, schemas },
  };
}

/** The 200 body: the output message, or the one field that `http_response_field` names. */
function responseSchema(generator: Generator, method: DescMethod): JsonSchema {
  const name = httpResponseField(method);
  if (!name) return generator.messageRef(method.output, "response");
  const field = method.output.fields.find((f) => f.name === name) ?? method.output.fields.find((f) => f.jsonName === name);
  if (!field) throw new Error(`${method.parent.typeName}.${method.name}: http_response_field "${name}" is not a field of ${method.output.typeName}`);
  const schema = generator.fieldSchema(field, "response");
  const description = generator.comment(`r:${method.parent.typeName}.${method.name}`);
  return { ...schema, ...(description && !schema.description && { description }) };
}
