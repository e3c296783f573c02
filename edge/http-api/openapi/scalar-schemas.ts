/**
 * The JSON Schema of protobuf JSON's fixed forms: scalar values and the google.protobuf types
 * that protobuf JSON writes in a special way. Each call returns a fresh object, so callers may add
 * keywords to it.
 */
import { ScalarType, type DescMessage } from "@bufbuild/protobuf";
import type { JsonSchema } from "./openapi-types.ts";

/** A scalar as protobuf JSON writes it (64-bit integers are decimal strings, bytes base64). */
export function scalarSchema(type: ScalarType): JsonSchema {
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
      // No format: OpenAPI's registry names none for an unsigned 64-bit integer; the pattern says it.
      return { type: "string", pattern: "^[0-9]+$" };
  }
}

/** The wrapper types: protobuf JSON writes each as the scalar it wraps. */
const wrapperTypes = new Map<string, ScalarType>([
  ["google.protobuf.DoubleValue", ScalarType.DOUBLE],
  ["google.protobuf.FloatValue", ScalarType.FLOAT],
  ["google.protobuf.Int64Value", ScalarType.INT64],
  ["google.protobuf.UInt64Value", ScalarType.UINT64],
  ["google.protobuf.Int32Value", ScalarType.INT32],
  ["google.protobuf.UInt32Value", ScalarType.UINT32],
  ["google.protobuf.BoolValue", ScalarType.BOOL],
  ["google.protobuf.StringValue", ScalarType.STRING],
  ["google.protobuf.BytesValue", ScalarType.BYTES],
]);

/**
 * The protobuf JSON form of a google.protobuf type, or undefined for any other message; a
 * google.protobuf message not listed here is left open (`{}`).
 */
export function wellKnownSchema(desc: DescMessage): JsonSchema | undefined {
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
    default: {
      const wrapped = wrapperTypes.get(desc.typeName);
      if (wrapped !== undefined) return scalarSchema(wrapped);
      return desc.typeName.startsWith("google.protobuf.") ? {} : undefined;
    }
  }
}
