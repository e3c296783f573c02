/**
 * What the client derives from the contract, checked against the contract: the services it
 * exposes (every public user-facing one, nothing else), the methods that page (in the types and at
 * run time alike), and the HTTP statuses it shares with the edge.
 */
import assert from "node:assert/strict";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { createOutpostClient, publicServices, type OutpostClient, type Paged } from "../src/index.ts";
import { pageItemsField } from "../src/paging.ts";
import { Audience, httpRouter, serviceAudience, services } from "../../../contract/services.ts";
import { codeHttpStatus, connectCodeName, failureHttpStatus } from "../../../contract/http-status.ts";
import { errorBody } from "../../../edge/errors.ts";
import { ErrorInfoSchema } from "../../../gen/outpost/errors/v1/errors_pb.js";
import type { ActivityEvent } from "../../../gen/outpost/activity/v1/activity_service_pb.js";

/** "router.method" of every method whose type is paged. */
type PagedMethodNames = {
  [R in keyof OutpostClient]: {
    [M in keyof OutpostClient[R] & string]: OutpostClient[R][M] extends (...args: never[]) => Paged<unknown, unknown> ? `${R}.${M}` : never;
  }[keyof OutpostClient[R] & string];
}[keyof OutpostClient];

/** Every paged method, written out: the type below fails to compile if the types page one more or one less. */
const pagedMethods = [
  "activity.listOrganizationActivity",
  "activity.listMyActivity",
  "activity.listPlatformActivity",
  "alerts.listAlertDeliveries",
  "chat.listConversations",
  "knowledge.listNotes",
  "notifications.listNotifications",
  "organizations.listAccessRequests",
  "servers.listScheduleRuns",
  "servers.listFiles",
] as const satisfies readonly PagedMethodNames[];
const allPagedListed: [Exclude<PagedMethodNames, (typeof pagedMethods)[number]>] extends [never] ? true : false = true;

/** Compiles only while the types say so: a paged list's items are its messages, a stream is iterable, uploadFile is absent. */
export function typedSurface(client: OutpostClient): void {
  const events: AsyncIterable<ActivityEvent> = client.activity.listOrganizationActivity({ organizationSlug: "acme" });
  const first: Promise<{ nextCursor: string; events: ActivityEvent[] }> = client.activity.listOrganizationActivity({ organizationSlug: "acme" });
  const lines: AsyncIterable<{ lines: string[] }> = client.servers.watchConsole({ serverId: "" });
  // @ts-expect-error -- a plain query is a promise, not an iterable
  const notPaged: AsyncIterable<unknown> = client.servers.getServer({ serverId: "" });
  // @ts-expect-error -- client streaming: fetch cannot stream a request body everywhere
  void client.servers.uploadFile;
  void [events, first, lines, notPaged];
}

describe("@outpost/client: what it derives from the contract", () => {
  it("exposes every user-facing service with an http_router under that name, and no other", () => {
    const expected = services
      .filter((service) => httpRouter(service) && serviceAudience(service) === Audience.USER)
      .map((service) => [httpRouter(service), service.typeName])
      .sort();
    assert.deepEqual(
      Object.entries(publicServices)
        .map(([router, service]) => [router, service.typeName])
        .sort(),
      expected,
    );
    const client = createOutpostClient({ baseUrl: "http://outpost.invalid", apiKey: "opk_test" });
    assert.deepEqual(Object.keys(client).sort(), Object.keys(publicServices).sort());
    for (const [router, service] of Object.entries(publicServices)) {
      const methods = service.methods.filter((m) => m.methodKind === "unary" || m.methodKind === "server_streaming").map((m) => m.localName);
      assert.deepEqual(Object.keys(client[router as keyof OutpostClient]).sort(), methods.sort(), router);
    }
    for (const internal of ["outpost.agent.v1.AgentService", "outpost.identity.v1.IdentityService", "outpost.keys.v1.KeysService"]) {
      assert.ok(!Object.values(publicServices).some((s) => s.typeName === internal), internal);
    }
  });

  it("pages the same methods at run time as in its types", () => {
    assert.equal(allPagedListed, true);
    const atRunTime = Object.entries(publicServices).flatMap(([router, service]) =>
      service.methods.filter((m) => pageItemsField(m)).map((m) => `${router}.${m.localName}`),
    );
    assert.deepEqual(atRunTime.sort(), [...pagedMethods].sort());
  });

  it("gives each failure the HTTP status the edge gives it, from one table", () => {
    for (const code of Object.values(Code).filter((c): c is Code => typeof c === "number")) {
      assert.equal(
        connectCodeName(code),
        Code[code].replace(/[A-Z]/g, (c, i) => (i ? "_" : "") + c.toLowerCase()),
      );
    }
    assert.deepEqual(
      ["invalid_argument", "unauthenticated", "permission_denied", "not_found", "aborted", "resource_exhausted", "unavailable", "deadline_exceeded", "internal"].map(
        codeHttpStatus,
      ),
      [400, 401, 403, 404, 409, 429, 503, 504, 500],
    );
    assert.equal(failureHttpStatus("invalid_argument", "idempotency_key_reused"), 422);
    assert.equal(failureHttpStatus("failed_precondition", "too_large"), 413);
    assert.equal(failureHttpStatus("aborted", "idempotency_key_in_flight"), 409);
    assert.equal(failureHttpStatus("not_found", "constructor"), 404);
    const reused = new ConnectError("key reused", Code.InvalidArgument, undefined, [
      { desc: ErrorInfoSchema, value: create(ErrorInfoSchema, { reason: "idempotency_key_reused" }) },
    ]);
    assert.deepEqual(errorBody(reused, "req-1"), { code: "invalid_argument", status: 422, message: "key reused", reason: "idempotency_key_reused" });
  });
});
