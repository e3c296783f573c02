/**
 * Proto comments for the OpenAPI document. The runtime descriptors in gen/ carry no source info, so
 * comments come from a separate descriptor set (or buf image) built with it; without one the
 * document simply has no comment-based descriptions.
 */
import { fromBinary } from "@bufbuild/protobuf";
import { FileDescriptorSetSchema, type DescriptorProto, type EnumDescriptorProto, type FileDescriptorSet } from "@bufbuild/protobuf/wkt";

/**
 * Cleaned comments keyed by "<kind>:<full name>", the kind being one letter: m message, f field
 * (`f:<message>.<field name>`), o oneof, e enum, v enum value (`v:<enum>.<VALUE_NAME>`), s service,
 * r method (`r:<service>.<Method>`). Only elements that have a comment have a key.
 */
export type Comments = ReadonlyMap<string, string>;

/**
 * The comments of a descriptor set, given as protobuf binary or already decoded; an empty map
 * when there is none.
 */
export function readComments(sourceInfo: Uint8Array | FileDescriptorSet | undefined): Comments {
  if (!sourceInfo) return new Map();
  return indexComments(sourceInfo instanceof Uint8Array ? fromBinary(FileDescriptorSetSchema, sourceInfo) : sourceInfo);
}

/** A comment's text: the space after `//` dropped, wrapped lines joined (lists and blank lines kept). */
function cleanComment(text: string): string {
  const lines = text
    .replace(/\r\n?/g, "\n")
    .split("\n")
    .map((line) => (line.startsWith(" ") ? line.slice(1) : line));
  return lines
    .join("\n")
    .trim()
    .replace(/([^\n])\n(?![\n\s*+-]|\d+\.)/g, "$1 ");
}

/**
 * Walks each file's elements by their SourceCodeInfo paths (field numbers as in descriptor.proto:
 * a file's messages 4, enums 5, services 6; a message's fields 2, nested messages 3, enums 4,
 * oneofs 8; an enum's values 2; a service's methods 2). A leading comment wins over a trailing one.
 */
function indexComments(set: FileDescriptorSet): Comments {
  const comments = new Map<string, string>();
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
