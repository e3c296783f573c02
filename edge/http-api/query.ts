/**
 * A query's input from individual URL query parameters, decoded by walking the request message's
 * descriptor: one parameter per field (by its JSON name), repeated fields as repeated keys.
 */
import { ScalarType, type DescField, type DescMessage, type JsonValue } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";

function invalid(message: string): ConnectError {
  return new ConnectError(message, Code.InvalidArgument);
}

const int32 = /^-?\d{1,10}$/;

function scalar(field: DescField, type: ScalarType, raw: string): JsonValue {
  const name = field.jsonName;
  switch (type) {
    case ScalarType.STRING:
    case ScalarType.BYTES:
      return raw;
    case ScalarType.BOOL:
      if (raw === "true") return true;
      if (raw === "false") return false;
      throw invalid(`${name}: must be true or false`);
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
    case ScalarType.UINT32:
    case ScalarType.FIXED32: {
      const n = Number(raw);
      if (!int32.test(raw) || !Number.isSafeInteger(n)) throw invalid(`${name}: must be a whole number`);
      return n;
    }
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT: {
      const n = Number(raw);
      if (raw.trim() === "" || !Number.isFinite(n)) throw invalid(`${name}: must be a number`);
      return n;
    }
    default:
      // 64-bit integers travel as strings in protobuf JSON; fromJson checks them.
      return raw;
  }
}

function value(field: DescField, raw: string): JsonValue {
  switch (field.fieldKind) {
    case "scalar":
      return scalar(field, field.scalar, raw);
    case "enum":
      return raw;
    case "message":
      if (field.message.typeName === "google.protobuf.Timestamp") return raw;
      throw invalid(`${field.jsonName}: cannot be given in a query string`);
    case "list":
      if (field.listKind === "scalar") return scalar(field, field.scalar, raw);
      if (field.listKind === "enum") return raw;
      throw invalid(`${field.jsonName}: cannot be given in a query string`);
    case "map":
      throw invalid(`${field.jsonName}: cannot be given in a query string`);
  }
}

/** The request's JSON (API form) from the query string; unknown or repeated-by-mistake keys are refused. */
export function queryToJson(desc: DescMessage, params: URLSearchParams): { [key: string]: JsonValue } {
  const json: { [key: string]: JsonValue } = {};
  const unknown: string[] = [];
  for (const key of new Set(params.keys())) {
    const field = desc.fields.find((f) => f.jsonName === key);
    if (!field) {
      unknown.push(key);
      continue;
    }
    const raws = params.getAll(key);
    if (field.fieldKind === "list") {
      json[key] = raws.map((raw) => value(field, raw));
    } else {
      if (raws.length > 1) throw invalid(`${key}: given more than once`);
      json[key] = value(field, raws[0]);
    }
  }
  if (unknown.length) throw invalid(`unknown parameter${unknown.length > 1 ? "s" : ""}: ${unknown.join(", ")}`);
  return json;
}
