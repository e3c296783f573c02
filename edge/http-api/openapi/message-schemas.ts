/**
 * Messages, fields and enums as JSON Schema, in the protobuf JSON the API speaks (json.ts): field
 * names by JSON name, enums by their short lower-case names. A message is a component referenced by
 * `$ref`; the same message can need two components, because a request schema refuses unknown fields
 * and carries the buf.validate rules while a response schema marks what is always present.
 */
import { getOption, hasOption, ScalarType, type DescEnum, type DescField, type DescMessage, type DescOneof } from "@bufbuild/protobuf";
import { oneof as oneofRulesExtension, type EnumRules, type FieldRules } from "@bufbuild/protovalidate/gen/buf/validate/validate_pb.js";
import { codeList, joinText } from "./descriptions.ts";
import type { JsonSchema } from "./openapi-types.ts";
import { allowedEnumNames, applyFieldRules, applyMapRules, applyRepeatedRules, applyStringRules } from "./rule-keywords.ts";
import { scalarSchema, wellKnownSchema } from "./scalar-schemas.ts";
import type { Comments } from "./source-comments.ts";
import { fieldRules, hasPresence, requiredInRequest } from "./validate-rules.ts";

/** Which side of a call a schema describes: what a client sends, or what it gets back. */
export type Direction = "request" | "response";

/**
 * The component schemas of one document, made on first use. Call {@link collectOutputs} for every
 * method's output before asking for any schema: a message that a response can contain is named by
 * its full name, and its request variant (if one is needed) gets the suffix "Input".
 */
export class MessageSchemas {
  /** The components made so far, by name (in the order they were made). */
  readonly schemas = new Map<string, JsonSchema>();
  private readonly outputMessages = new Set<string>();
  private readonly comments: Comments;

  constructor(comments: Comments) {
    this.comments = comments;
  }

  /** The proto comment of an element, by its key (see {@link Comments}). */
  comment(key: string): string | undefined {
    return this.comments.get(key);
  }

  /** Records every message a response can contain, so that request variants get their own names. */
  collectOutputs(desc: DescMessage): void {
    if (this.outputMessages.has(desc.typeName) || wellKnownSchema(desc)) return;
    this.outputMessages.add(desc.typeName);
    for (const field of desc.fields) {
      if (field.message) this.collectOutputs(field.message); // a message field, or a list or map of messages
    }
  }

  /** A $ref to the message's component, made on first use; a well-known type is inline instead. */
  messageRef(desc: DescMessage, direction: Direction): JsonSchema {
    const wkt = wellKnownSchema(desc);
    if (wkt) return { ...wkt };
    const name = direction === "request" && this.outputMessages.has(desc.typeName) ? `${desc.typeName}Input` : desc.typeName;
    if (!this.schemas.has(name)) {
      this.schemas.set(name, {}); // reserved first: messages may be recursive
      this.schemas.set(name, this.messageSchema(desc, direction));
    }
    return { $ref: `#/components/schemas/${name}` };
  }

  /** A field's schema with its rules (requests) and its comment. */
  fieldSchema(field: DescField, direction: Direction): JsonSchema {
    const rules = direction === "request" ? fieldRules(field) : undefined;
    const notes: string[] = [];
    let schema: JsonSchema;
    if (field.fieldKind === "list") {
      const repeated = rules?.type.case === "repeated" ? rules.type.value : undefined;
      const itemRules = repeated?.items;
      const items = this.valueSchema(field, direction, itemRules ?? rules);
      if (itemRules) applyFieldRules(items, itemRules, notes, field);
      schema = { type: "array", items };
      if (repeated) applyRepeatedRules(schema, repeated);
    } else if (field.fieldKind === "map") {
      const map = rules?.type.case === "map" ? rules.type.value : undefined;
      const valueRules = map?.values;
      const values = this.valueSchema(field, direction, valueRules);
      if (valueRules) applyFieldRules(values, valueRules, notes, field);
      schema = { type: "object", additionalProperties: values };
      const keyRules = map?.keys?.type;
      if (field.mapKey !== ScalarType.STRING) {
        schema.propertyNames = field.mapKey === ScalarType.BOOL ? { enum: ["true", "false"] } : { pattern: "^-?[0-9]+$" };
      } else if (keyRules?.case === "string") {
        const keys: JsonSchema = {};
        applyStringRules(keys, keyRules.value, notes);
        if (Object.keys(keys).length) schema.propertyNames = keys;
      }
      if (map) applyMapRules(schema, map);
    } else {
      schema = this.valueSchema(field, direction, rules);
      if (rules) applyFieldRules(schema, rules, notes, field);
    }
    const oneof = field.oneof;
    const description = joinText(
      this.comment(`f:${field.parent.typeName}.${field.name}`),
      oneof ? `One of \`${oneof.name}\`: at most one of ${codeList(oneof.fields.map((f) => f.jsonName))} may be set.` : undefined,
      notes.join(" ") || undefined,
    );
    if (description) schema.description = schema.description ? `${description}\n\n${schema.description}` : description;
    if (field.deprecated) schema.deprecated = true;
    return schema;
  }

  /** A message's schema: every field by its JSON name. */
  private messageSchema(desc: DescMessage, direction: Direction): JsonSchema {
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
      applyOneofs(schema, desc.oneofs);
    }
    const description = this.comment(`m:${desc.typeName}`);
    if (description) schema.description = description;
    return schema;
  }

  /**
   * The schema of one value of the field's type: the field's own, or one item's (a list) or one
   * value's (a map). Each kind of field names exactly one of scalar, enum and message.
   */
  private valueSchema(field: DescField, direction: Direction, rules: FieldRules | undefined): JsonSchema {
    if (field.enum) return this.enumSchema(field.enum, direction, rules?.type.case === "enum" ? rules.type.value : undefined);
    if (field.message) return this.messageRef(field.message, direction);
    return scalarSchema(field.scalar);
  }

  /**
   * Request enums are inline: the names a request may use, after the field's rules. Response
   * enums are components holding every value ("unspecified" included), each value's comment
   * listed in the description.
   */
  private enumSchema(desc: DescEnum, direction: Direction, rules: EnumRules | undefined): JsonSchema {
    if (desc.typeName === "google.protobuf.NullValue") return { type: "null" };
    if (direction === "request") return { type: "string", enum: allowedEnumNames(desc, rules) };
    const name = desc.typeName;
    if (!this.schemas.has(name)) {
      const described = desc.values
        .map((v) => {
          const text = this.comment(`v:${desc.typeName}.${v.name}`);
          return text ? `- \`${v.localName.toLowerCase()}\`: ${text.replace(/\s*\n\s*/g, " ")}` : undefined;
        })
        .filter(Boolean);
      const description = joinText(this.comment(`e:${desc.typeName}`), described.join("\n"));
      this.schemas.set(name, {
        type: "string",
        enum: desc.values.map((v) => v.localName.toLowerCase()),
        ...(description && { description }),
      });
    }
    return { $ref: `#/components/schemas/${name}` };
  }
}

/** At most one member of each oneof may be set; a required oneof needs exactly one. */
function applyOneofs(schema: JsonSchema, oneofs: readonly DescOneof[]): void {
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
      notes.push(`Exactly one of ${codeList(names)} must be set.`);
    }
  }
  if (Object.keys(dependent).length) schema.dependentSchemas = dependent;
  if (notes.length) schema.description = joinText(schema.description as string | undefined, notes.join(" "));
}
