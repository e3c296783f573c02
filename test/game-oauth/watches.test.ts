import assert from "node:assert/strict";
import { Code, ConnectError } from "@connectrpc/connect";
import { AuthorizationStatus, GameOAuthService, type WatchAuthorizationResponse } from "../../gen/outpost/gameoauth/v1/game_oauth_service_pb.js";
import { RetryInfoSchema } from "../../gen/outpost/errors/v1/errors_pb.js";
import { clientIpHeader } from "../../contract/credentials.ts";
import { watchesPerClientIp } from "../../core/game-oauth/watches.ts";
import { rejectsWith } from "../support/errors.ts";
import { binding, codeOf, createWorld, playAndConfirm, player, type World } from "./fixture.ts";

/** The hosted pages' watches are bounded: one per session, {@link watchesPerClientIp} per address. */
describe("Game OAuth: live-status watches are bounded", function () {
  this.timeout(60_000);
  let w: World;
  let clientId: string;

  before(async () => {
    w = await createWorld();
    clientId = (await w.createClient()).clientId;
  });
  after(async () => {
    await w?.close();
  });

  const from = (ip: string) => w.t.client(GameOAuthService, { headers: { [clientIpHeader]: ip } });

  /** Opens a watch and reads its first message; `stop` aborts it. */
  async function watch(ip: string, sessionId: string, bindingHash: string) {
    const abort = new AbortController();
    const stream = from(ip).watchAuthorization({ sessionId, browserBindingHash: bindingHash }, { signal: abort.signal })[Symbol.asyncIterator]();
    const first = await stream.next();
    // Aborted while nobody reads it: the watch still gives its slot back.
    return { first: first.value as WatchAuthorizationResponse, next: () => stream.next(), stop: () => abort.abort() };
  }

  it("a second watch of a session ends the first, which is told `replaced`; the completion reaches the second", async () => {
    const server = await w.createServer("Survival");
    const { session, binding: browser } = await w.start({ clientId });
    const first = await watch("198.51.100.1", session.sessionId, browser);
    assert.equal(first.first.session?.status, AuthorizationStatus.PENDING);

    // Another browser cannot take the session's watch over.
    await rejectsWith(watch("198.51.100.9", session.sessionId, binding()), Code.NotFound, "not_found");

    const second = await watch("198.51.100.1", session.sessionId, browser);
    const last = await first.next();
    assert.equal(last.value?.replaced, true);
    assert.equal(last.value?.session, undefined);
    assert.equal((await first.next()).done, true, "the replaced watch ends");
    assert.equal(w.t.deps.watches.count("198.51.100.1"), 1, "one slot for the session");

    assert.equal((await playAndConfirm(server.agent!, player(), session)).accepted, true);
    const done = (await second.next()).value as WatchAuthorizationResponse;
    assert.equal(done.session?.status, AuthorizationStatus.COMPLETED);
    assert.ok(codeOf(done.session!));
    assert.equal((await second.next()).done, true);
    assert.equal(w.t.deps.watches.count("198.51.100.1"), 0, "an ended watch gives its slot back");
  });

  it(`refuses a client address its ${watchesPerClientIp + 1}st open watch with rate_limited and RetryInfo; another address, a replacement and a freed slot are fine`, async () => {
    const ip = "203.0.113.7";
    const open: Array<Awaited<ReturnType<typeof watch>> & { sessionId: string; binding: string }> = [];
    try {
      for (let i = 0; i < watchesPerClientIp; i++) {
        const { session, binding: browser } = await w.start({ clientId });
        open.push({ ...(await watch(ip, session.sessionId, browser)), sessionId: session.sessionId, binding: browser });
      }
      assert.equal(w.t.deps.watches.count(ip), watchesPerClientIp);
      const { session, binding: browser } = await w.start({ clientId });
      const refused = await rejectsWith(watch(ip, session.sessionId, browser), Code.ResourceExhausted, "rate_limited");
      const [retry] = ConnectError.from(refused).findDetails(RetryInfoSchema);
      assert.ok(retry && retry.retryAfterSeconds >= 1, "RetryInfo says when");
      assert.equal(retry.limit, watchesPerClientIp);
      // The same address replacing one of its own watches stays within its count.
      const again = await watch(ip, open[0].sessionId, open[0].binding);
      assert.equal((await open[0].next()).value?.replaced, true);
      open[0] = { ...again, sessionId: open[0].sessionId, binding: open[0].binding };
      // Another address is counted apart.
      const other = await watch("203.0.113.8", session.sessionId, browser);
      other.stop();
      // A watch that ends frees its slot.
      open.pop()!.stop();
      await waitFor(() => w.t.deps.watches.count(ip) === watchesPerClientIp - 1);
      const fits = await watch(ip, session.sessionId, browser);
      fits.stop();
    } finally {
      for (const o of open) o.stop();
    }
    await waitFor(() => w.t.deps.watches.count(ip) === 0);
  });

  it("a watch whose caller leaves before the first answer takes no slot", async () => {
    const ip = "198.51.100.3";
    for (let i = 0; i < 5; i++) {
      const { session, binding: browser } = await w.start({ clientId });
      const abort = new AbortController();
      const first = from(ip).watchAuthorization({ sessionId: session.sessionId, browserBindingHash: browser }, { signal: abort.signal })[Symbol.asyncIterator]().next();
      await new Promise((resolve) => setImmediate(resolve));
      abort.abort();
      await first.catch(() => {});
    }
    // Each handler finishes its read and returns (a short wait: a slow read only makes this pass early); none may leave a slot.
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(w.t.deps.watches.count(ip), 0);
  });

  it("counts IPv6 addresses by their /64", async () => {
    const open: Array<{ stop(): void }> = [];
    try {
      for (let i = 0; i < watchesPerClientIp; i++) {
        const { session, binding: browser } = await w.start({ clientId });
        open.push(await watch(`2001:db8:1:2::${(i + 1).toString(16)}`, session.sessionId, browser));
      }
      const { session, binding: browser } = await w.start({ clientId });
      await rejectsWith(watch("2001:db8:1:2:ffff::1", session.sessionId, browser), Code.ResourceExhausted, "rate_limited");
    } finally {
      for (const o of open) o.stop();
    }
  });

  it("a watch ends when its session expires", async () => {
    const { session, binding: browser } = await w.start({ clientId });
    const watching = await watch("198.51.100.2", session.sessionId, browser);
    w.t.clock.advance(600_001);
    try {
      const last = (await watching.next()).value as WatchAuthorizationResponse;
      assert.equal(last.session?.status, AuthorizationStatus.EXPIRED);
      assert.equal((await watching.next()).done, true);
      assert.equal(w.t.deps.watches.count("198.51.100.2"), 0);
      // An expired session is shown once, and takes no slot.
      const late = await watch("198.51.100.2", session.sessionId, browser);
      assert.equal(late.first.session?.status, AuthorizationStatus.EXPIRED);
      assert.equal((await late.next()).done, true);
    } finally {
      w.t.clock.advance(-600_001);
    }
  });
});

/** Resolves once `check` holds (an aborted watch ends on its next turn of the event loop). */
async function waitFor(check: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  assert.ok(check(), "the condition never held");
}
