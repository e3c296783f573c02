/**
 * A UUID as the contract's `string.uuid` rule takes it (hyphenated hex, either case): checked
 * before the contract's own validation runs (core's auth interceptor), or where no contract rule
 * applies (an assistant's tool arguments), or before a message goes out (the agent's players).
 */
const uuidShape = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(text: string): boolean {
  return uuidShape.test(text);
}
