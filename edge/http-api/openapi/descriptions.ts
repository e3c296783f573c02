/** Small pieces of the document's prose, shared by schemas and operations. */

/** The non-empty parts as paragraphs, or undefined when there are none (so that no empty description is written). */
export function joinText(...parts: Array<string | undefined>): string | undefined {
  const text = parts.filter((p): p is string => !!p && p.length > 0).join("\n\n");
  return text || undefined;
}

/** Names as inline code, comma-separated: "`a`, `b`". */
export function codeList(names: readonly string[]): string {
  return names.map((name) => `\`${name}\``).join(", ");
}
