/**
 * The client's types, derived from the generated descriptors' types: a method's request and
 * response are protobuf-es's message types, and a cursor-paged list's items the element type of
 * its one repeated message field. Nothing here names a method.
 */
import type { DescMessage, DescService, Message, MessageInitShape, MessageShape } from "@bufbuild/protobuf";
import type { CallOptions, StreamOptions } from "./call.ts";
import type { Paged } from "./paging.ts";
import type { PublicServices } from "./services.ts";

/** The keys of a message's repeated message fields. */
type ListKeys<T> = { [K in keyof T]-?: T[K] extends readonly (infer E)[] ? (E extends Message ? K : never) : never }[keyof T];

type IsUnion<T, U = T> = T extends unknown ? ([U] extends [T] ? false : true) : never;

/** The element type of the one list `K` of `T`; never when there is none, or more than one. */
type OneListItem<T, K> = [K] extends [never] ? never : true extends IsUnion<K> ? never : K extends keyof T ? (T[K] extends readonly (infer E)[] ? E : never) : never;

/**
 * A list's item type when the method pages by cursor (request `cursor`, response `nextCursor` and
 * one repeated message field: paging.ts `pageItemsField` says the same at run time), else never.
 */
export type PageItem<I extends DescMessage, O extends DescMessage> = "cursor" extends keyof MessageShape<I>
  ? "nextCursor" extends keyof MessageShape<O>
    ? OneListItem<MessageShape<O>, ListKeys<MessageShape<O>>>
    : never
  : never;

/** A unary method: a promise of the response; for a paged list, also an async iterable over every item. */
export type UnaryMethod<I extends DescMessage, O extends DescMessage> = [PageItem<I, O>] extends [never]
  ? (request: MessageInitShape<I>, options?: CallOptions) => Promise<MessageShape<O>>
  : (request: MessageInitShape<I>, options?: CallOptions) => Paged<MessageShape<O>, PageItem<I, O>>;

/** A server-streaming method: Outpost's messages as they come. */
export type StreamMethod<I extends DescMessage, O extends DescMessage> = (request: MessageInitShape<I>, options?: StreamOptions) => AsyncIterable<MessageShape<O>>;

/**
 * One service's methods by their lowerCamelCase names. Client- and bidirectional-streaming
 * methods are left out: fetch cannot send a request body as a stream everywhere.
 */
export type ServiceClient<S extends DescService> = {
  readonly [K in keyof S["method"] as S["method"][K]["methodKind"] extends "unary" | "server_streaming" ? K : never]: S["method"][K] extends {
    methodKind: "unary";
    input: infer I extends DescMessage;
    output: infer O extends DescMessage;
  }
    ? UnaryMethod<I, O>
    : S["method"][K] extends { methodKind: "server_streaming"; input: infer I extends DescMessage; output: infer O extends DescMessage }
      ? StreamMethod<I, O>
      : never;
};

/** Every public service's client, under its router name (`client.servers`, `client.activity`, …). */
export type OutpostClient = { readonly [R in keyof PublicServices]: ServiceClient<PublicServices[R]> };
