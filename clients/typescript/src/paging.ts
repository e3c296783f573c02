/**
 * Cursor-paged lists. Outpost's convention (proto/outpost): the request has `cursor`, the
 * response `next_cursor` (empty on the last page) beside the one repeated message field that is
 * the page. Such a method is found from its descriptors, so every list that follows the
 * convention pages without code of its own, here or in the types (types.ts `PageItem`).
 */
import { ScalarType, type DescField, type DescMessage, type DescMethod } from "@bufbuild/protobuf";
import { OutpostError } from "./errors.ts";

/** The awaitable first page that is also an async iterable over every item of every page. */
export type Paged<Page, Item> = Promise<Page> &
  AsyncIterable<Item> & {
    /** Every page in turn, the first included, for what a page holds besides its items. */
    pages(): AsyncIterable<Page>;
  };

const stringField = (message: DescMessage, name: string) => message.fields.find((f) => f.name === name && f.fieldKind === "scalar" && f.scalar === ScalarType.STRING);

/** The field holding a page's items, if the method is a cursor-paged list; undefined otherwise. */
export function pageItemsField(method: DescMethod): DescField | undefined {
  if (method.methodKind !== "unary" || !stringField(method.input, "cursor") || !stringField(method.output, "next_cursor")) return undefined;
  const lists = method.output.fields.filter((f) => f.fieldKind === "list" && f.listKind === "message");
  return lists.length === 1 ? lists[0] : undefined;
}

type Page = Record<string, unknown> & { nextCursor: string };

/**
 * Calls the first page at once (as any call), and pages on while the caller iterates. `call`
 * is the method's one-page call, with its options and retries, for each page.
 */
export function paged<Req extends object, Res>(call: (request: Req) => Promise<Res>, request: Req, items: DescField): Paged<Res, unknown> {
  const first = call(request);
  async function* pages(): AsyncGenerator<Res> {
    let page = await first;
    // The cursor the first page was asked with, if any: an answer naming it again would loop too.
    let cursor = (request as { cursor?: string }).cursor || undefined;
    for (;;) {
      yield page;
      const next = (page as Page).nextCursor;
      if (!next) return;
      // An answer that points back at itself would page forever.
      if (next === cursor) throw new OutpostError(`Outpost answered the cursor it was sent as the next one`, { code: "internal" });
      cursor = next;
      page = await call({ ...request, cursor });
    }
  }
  async function* all(): AsyncGenerator<unknown> {
    for await (const page of pages()) yield* (page as Page)[items.localName] as unknown[];
  }
  return Object.assign(first, { pages, [Symbol.asyncIterator]: all });
}
