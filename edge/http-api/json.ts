/**
 * The HTTP API's JSON: protobuf JSON, except that enums travel as their short lower-case names
 * ("minecraft" for GAME_MINECRAFT) and every field of a response is present. Both directions walk
 * the descriptors, so a new message or enum needs no code here.
 */
import { fromJson, toJson, type DescEnum, type DescField, type DescMessage, type JsonValue, type Message } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";

/** The API's name for an enum value: its name without the enum's prefix, lower-cased. */
export function enumValueName(desc: DescEnum, number: number): string | undefined {
  return desc.values.find((v) => v.number === number)?.localName.toLowerCase();
}

/** Every API name of an enum's values (UNSPECIFIED excluded: it is never a valid input). */
export function enumValueNames(desc: DescEnum): string[] {
  return desc.values.filter((v) => v.number !== 0).map((v) => v.localName.toLowerCase());
}

type JsonObject = { [key: string]: JsonValue };

function isObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A message-typed field that is a JSON object in protobuf JSON (not a well-known scalar form). */
function walkable(message: DescMessage): boolean {
  return !message.typeName.startsWith("google.protobuf.");
}

function mapEnum(desc: DescEnum, value: JsonValue, toApi: boolean, path: string): JsonValue {
  if (toApi) {
    const found = typeof value === "string" && desc.values.find((v) => v.name === value);
    return found ? found.localName.toLowerCase() : value;
  }
  if (value === null) return value;
  const found = typeof value === "string" && desc.values.find((v) => v.localName.toLowerCase() === value && v.number !== 0);
  if (!found) throw new ConnectError(`${path}: must be one of ${enumValueNames(desc).join(", ")}`, Code.InvalidArgument);
  return found.name;
}

function mapField(field: DescField, value: JsonValue, toApi: boolean, path: string): JsonValue {
  switch (field.fieldKind) {
    case "enum":
      return mapEnum(field.enum, value, toApi, path);
    case "message":
      return walkable(field.message) ? mapMessage(field.message, value, toApi, path) : value;
    case "list":
      if (!Array.isArray(value)) return value;
      if (field.listKind === "enum") return value.map((v, i) => mapEnum(field.enum, v, toApi, `${path}[${i}]`));
      if (field.listKind === "message" && walkable(field.message)) {
        return value.map((v, i) => mapMessage(field.message, v, toApi, `${path}[${i}]`));
      }
      return value;
    case "map":
      if (!isObject(value)) return value;
      if (field.mapKind === "enum") {
        return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, mapEnum(field.enum, v, toApi, `${path}.${k}`)]));
      }
      if (field.mapKind === "message" && walkable(field.message)) {
        return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, mapMessage(field.message, v, toApi, `${path}.${k}`)]));
      }
      return value;
    default:
      return value;
  }
}

function mapMessage(desc: DescMessage, value: JsonValue, toApi: boolean, path = ""): JsonValue {
  if (!isObject(value)) return value;
  const at = (key: string) => (path ? `${path}.${key}` : key);
  if (!toApi) {
    const unknown = Object.keys(value).filter((key) => !desc.fields.some((f) => f.jsonName === key));
    if (unknown.length) {
      throw new ConnectError(`unknown field${unknown.length > 1 ? "s" : ""}: ${unknown.map(at).join(", ")}`, Code.InvalidArgument);
    }
  }
  const out: JsonObject = {};
  for (const [key, fieldValue] of Object.entries(value)) {
    const field = desc.fields.find((f) => f.jsonName === key);
    out[key] = field ? mapField(field, fieldValue, toApi, at(key)) : fieldValue;
  }
  return out;
}

/** A response message as the API's JSON: every field present, enums by short name. */
export function messageToApiJson(desc: DescMessage, message: Message): JsonValue {
  return mapMessage(desc, toJson(desc, message, { alwaysEmitImplicit: true }), true);
}

/** The API's JSON as a request message. Throws (naming the field) on unknown or ill-typed fields. */
export function messageFromApiJson<Desc extends DescMessage>(desc: Desc, json: JsonValue) {
  return fromJson(desc, mapMessage(desc, json, false), { ignoreUnknownFields: false });
}
