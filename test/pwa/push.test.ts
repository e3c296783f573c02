/**
 * Web Push through core's PwaService, against a local push endpoint that decrypts every payload
 * (RFC 8291) and verifies every VAPID header (RFC 8292) on its own: subscriptions, the test push,
 * gone subscriptions removed, one user's subscriptions invisible to another, and bad input
 * refused. The VAPID key itself: push-vapid.test.ts.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { Code } from "@connectrpc/connect";
import { PwaService } from "../../gen/outpost/pwa/v1/pwa_service_pb.js";
import { ActivityService } from "../../gen/outpost/activity/v1/activity_service_pb.js";
import { NotificationKind, NotificationsService } from "../../gen/outpost/notifications/v1/notifications_service_pb.js";
import { OrganizationsService } from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { Role } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { IdentityService } from "../../gen/outpost/identity/v1/identity_service_pb.js";
import { startTestCore, testConfig, type TestCore } from "../support/core.ts";
import { joinOrganization } from "../support/fixtures.ts";
import { rejectsWith } from "../support/errors.ts";
import type { PushEndpoint } from "../support/push-endpoint.ts";
import { sendPushToUser, maxPushPayloadBytes } from "../../core/pwa/push.ts";
import { maxSubscriptionsPerUser } from "../../core/pwa/pwa-service.ts";
import { startPushFixture, subject } from "./push-fixture.ts";

describe("pwa: Web Push subscriptions and delivery", function () {
  this.timeout(60_000);
  let t: TestCore;
  let push: PushEndpoint;
  let alice: { token: string; userId: string };
  let bob: { token: string; userId: string };
  const pwa = (who: { token: string }) => t.client(PwaService, { session: who.token });
  const sql = (text: string, params: unknown[] = []) => t.orm.em.fork().getConnection().execute(text, params);

  before(async () => {
    ({ t, push, alice, bob } = await startPushFixture());
  });
  after(async () => {
    await t?.close();
    await push?.close();
  });
  afterEach(() => assert.deepEqual(push.problems, []));

  async function subscribe(who: { token: string }, userAgent?: string) {
    const s = push.subscription();
    const res = await pwa(who).subscribe({ endpoint: s.endpoint, keys: s.keys.json, userAgent });
    return { ...s, id: res.subscription!.id };
  }

  it("pushes a notification of a kind the user chose to have pushed, and only such", async () => {
    const carol = await t.signUp("pushed@example.com");
    const s = await subscribe(carol, "Chrome on Android");
    const notes = t.client(NotificationsService, { session: carol.token });
    const orgs = t.client(OrganizationsService, { session: alice.token });
    await orgs.createOrganization({ name: "Pushy", slug: "pushy" });
    // A verified colleague of alice's (her lobby), so she adds carol at once, with a notification.
    await orgs.createOrganization({ name: "Alice's lobby", slug: "alice-lobby" });
    await joinOrganization(t, alice, "alice-lobby", carol, Role.MEMBER);
    const before = push.received.length;
    await orgs.addMember({ organizationSlug: "pushy", email: "pushed@example.com", role: Role.MEMBER });
    await orgs.updateMemberRole({ organizationSlug: "pushy", userId: carol.userId, role: Role.ADMIN });
    // Not pushed by default: kept for the bell only.
    assert.equal((await notes.getUnreadCount({})).unread, 2);
    await notes.updateNotificationPreferences({ preferences: [{ kind: NotificationKind.MEMBERSHIP, inApp: true, push: true }] });
    await orgs.updateMemberRole({ organizationSlug: "pushy", userId: carol.userId, role: Role.MEMBER });
    for (let i = 0; i < 100 && push.received.length === before; i++) await new Promise((r) => setTimeout(r, 50));
    assert.equal(push.received.length, before + 1, "one push: the role change after the preference, not the two before it");
    const got = push.received.at(-1)!;
    assert.equal(got.path, new URL(s.endpoint).pathname);
    assert.equal(got.message.title, "Your role in Pushy is now member");
    assert.equal(got.message.url, "/app/o/pushy");
  });

  it("ends a subscription made in a dashboard session with that session, and keeps one made with an API key", async () => {
    const dan = await t.signUp("signs-out@example.com");
    const inSession = await subscribe(dan, "Firefox on a shared laptop");
    const { key } = await t.client(IdentityService).issueApiKey({ email: "signs-out@example.com", name: "script" });
    const s = push.subscription();
    const byKey = (await t.client(PwaService, { apiKey: key }).subscribe({ endpoint: s.endpoint, keys: s.keys.json })).subscription!;
    await t.client(IdentityService, { session: dan.token }).signOut({});
    const left = (await t.client(PwaService, { apiKey: key }).listSubscriptions({})).subscriptions.map((x) => x.id);
    assert.deepEqual(left, [byKey.id], `the session's subscription ${inSession.id} went with the session`);
  });

  it("delivers the test push, encrypted to the browser's keys and signed for the endpoint's origin", async () => {
    const s = await subscribe(alice, "Firefox on Linux");
    const { outcomes } = await pwa(alice).sendTestPush({});
    assert.deepEqual(
      outcomes.map((o) => [o.subscriptionId, o.delivered, o.status, o.error, o.removed]),
      [[s.id, true, 201, "", false]],
    );
    const got = push.received.at(-1)!;
    assert.equal(got.path, new URL(s.endpoint).pathname);
    assert.equal(got.message.title, "Outpost");
    assert.match(String(got.message.body), /Test notification/);
    assert.equal(got.message.url, "/app/account/security");
    assert.equal(got.vapid.aud, push.origin);
    assert.equal(got.vapid.sub, subject);
    assert.equal(got.vapid.key, (await pwa(alice).getPushConfig({})).vapidPublicKey);
    const [listed] = (await pwa(alice).listSubscriptions({})).subscriptions;
    assert.equal(listed.id, s.id);
    assert.equal(listed.userAgent, "Firefox on Linux");
    assert.ok(listed.lastSuccessAt, "the delivery is remembered");
    await pwa(alice).unsubscribe({ target: { case: "subscriptionId", value: s.id } });
  });

  it("sendPushToUser sends a notification to every subscription of the user, and refuses one too large", async () => {
    const a = await subscribe(alice);
    const b = await subscribe(alice);
    const before = push.received.length;
    const outcomes = await sendPushToUser(t.deps, alice.userId, { title: "Server down", body: "Survival is offline", url: "/app/o/acme/servers", tag: "server-1" });
    assert.deepEqual(
      outcomes.map((o) => o.delivered),
      [true, true],
    );
    assert.deepEqual(new Set(outcomes.map((o) => o.subscriptionId)), new Set([a.id, b.id]));
    assert.deepEqual(
      push.received.slice(before).map((r) => r.message.title),
      ["Server down", "Server down"],
    );
    assert.deepEqual(await sendPushToUser(t.deps, bob.userId, { title: "x", body: "y" }), []);
    await assert.rejects(sendPushToUser(t.deps, alice.userId, { title: "big", body: "x".repeat(maxPushPayloadBytes) }), /at most/);
    for (const s of [a, b]) await pwa(alice).unsubscribe({ target: { case: "endpoint", value: s.endpoint } });
    assert.deepEqual((await pwa(alice).listSubscriptions({})).subscriptions, []);
  });

  it("removes a subscription the push service says is gone (404, 410) and keeps one that failed otherwise", async () => {
    const gone = await subscribe(alice);
    const expired = await subscribe(alice);
    const failing = await subscribe(alice);
    push.answer(gone.endpoint, 410);
    push.answer(expired.endpoint, 404);
    push.answer(failing.endpoint, 500);
    const { outcomes } = await pwa(alice).sendTestPush({});
    const byId = new Map(outcomes.map((o) => [o.subscriptionId, o]));
    assert.deepEqual([byId.get(gone.id)?.removed, byId.get(gone.id)?.status], [true, 410]);
    assert.deepEqual([byId.get(expired.id)?.removed, byId.get(expired.id)?.status], [true, 404]);
    assert.deepEqual([byId.get(failing.id)?.removed, byId.get(failing.id)?.delivered, byId.get(failing.id)?.status], [false, false, 500]);
    assert.match(byId.get(failing.id)!.error, /500/);
    assert.deepEqual(
      (await pwa(alice).listSubscriptions({})).subscriptions.map((s) => s.id),
      [failing.id],
    );
    await pwa(alice).unsubscribe({ target: { case: "subscriptionId", value: failing.id } });
  });

  it("keeps each user's subscriptions their own", async () => {
    const mine = await subscribe(alice);
    assert.deepEqual((await pwa(bob).listSubscriptions({})).subscriptions, []);
    await rejectsWith(pwa(bob).unsubscribe({ target: { case: "subscriptionId", value: mine.id } }), Code.NotFound, "not_found");
    await rejectsWith(pwa(bob).unsubscribe({ target: { case: "endpoint", value: mine.endpoint } }), Code.NotFound, "not_found");
    assert.equal((await pwa(bob).sendTestPush({})).outcomes.length, 0);
    assert.deepEqual(
      (await pwa(alice).listSubscriptions({})).subscriptions.map((s) => s.id),
      [mine.id],
    );
    // The same browser subscribing while signed in as Bob: the endpoint is his now, not both.
    await pwa(bob).subscribe({ endpoint: mine.endpoint, keys: mine.keys.json });
    assert.deepEqual((await pwa(alice).listSubscriptions({})).subscriptions, []);
    assert.equal((await pwa(bob).listSubscriptions({})).subscriptions.length, 1);
    // The move is a security event of the new owner's account (it names no other account).
    const { events } = await t.client(ActivityService, { session: bob.token }).listMyActivity({ action: "push_subscription", limit: 10 });
    const moved = events.find((e) => e.targetId === mine.id);
    assert.equal(moved?.action, "push_subscription.moved");
    assert.equal(moved?.details.moved_from, "another account");
    assert.ok(!JSON.stringify(moved?.details).includes("alice"));
    const [row] = await sql(`select kind, severity from activity_events where action = 'push_subscription.moved' and target_id = ?`, [mine.id]);
    assert.deepEqual([row.kind, row.severity], ["security", "warning"]);
    await pwa(bob).unsubscribe({ target: { case: "endpoint", value: mine.endpoint } });
  });

  it("keeps at most 20 browsers per person (409 past that)", async () => {
    const carol = await t.signUp("carol@example.com");
    for (let i = 0; i < maxSubscriptionsPerUser; i++) await subscribe(carol);
    await rejectsWith(subscribe(carol), Code.FailedPrecondition, "failed_precondition");
    assert.equal((await pwa(carol).listSubscriptions({})).subscriptions.length, maxSubscriptionsPerUser);
  });

  it("holds the cap under concurrent subscribes: at one below it, of eight at once exactly one is saved", async () => {
    const erin = await t.signUp("erin@example.com");
    for (let i = 0; i < maxSubscriptionsPerUser - 1; i++) await subscribe(erin);
    let results: PromiseSettledResult<unknown>[];
    if (t.database.kind === "postgres") {
      // The eight are held on Erin's row, then let go together, so their transactions overlap.
      const attempts = await t.orm.em.fork().transactional(async (em) => {
        await em.getConnection().execute(`select id from users where id = ? for update`, [erin.userId], "all", em.getTransactionContext());
        const started = Array.from({ length: 8 }, () => subscribe(erin));
        await new Promise((resolve) => setTimeout(resolve, 500));
        return { started };
      });
      results = await Promise.allSettled(attempts.started);
    } else {
      // The embedded database runs one transaction at a time.
      results = await Promise.allSettled(Array.from({ length: 8 }, () => subscribe(erin)));
    }
    assert.equal(results.filter((r) => r.status === "fulfilled").length, 1);
    for (const r of results) if (r.status === "rejected") assert.match(String(r.reason), /at most 20 browsers/);
    assert.equal((await pwa(erin).listSubscriptions({})).subscriptions.length, maxSubscriptionsPerUser);
    // At the cap, a browser already subscribed may still subscribe again (new keys): it adds nothing.
    const [first] = (await pwa(erin).listSubscriptions({})).subscriptions;
    const again = push.subscription();
    await pwa(erin).subscribe({ endpoint: first.endpoint, keys: again.keys.json });
    assert.equal((await pwa(erin).listSubscriptions({})).subscriptions.length, maxSubscriptionsPerUser);
  });

  it("records subscribing and unsubscribing in the account's activity", async () => {
    const s = await subscribe(alice, "Chrome on Android");
    await pwa(alice).unsubscribe({ target: { case: "subscriptionId", value: s.id } });
    const { events } = await t.client(ActivityService, { session: alice.token }).listMyActivity({ action: "push_subscription", limit: 200 });
    const ofThis = events.filter((e) => e.targetId === s.id).map((e) => [e.action, e.details.push_service]);
    assert.deepEqual(ofThis, [
      ["push_subscription.deleted", push.origin],
      ["push_subscription.created", push.origin],
    ]);
  });

  it("refuses a subscription that is not https, has no keys, or keys that are not a P-256 point and a 16-byte secret", async () => {
    const good = push.subscription();
    const offCurve = Buffer.concat([Buffer.from([4]), Buffer.alloc(64, 1)]).toString("base64url");
    const bad = [
      { endpoint: "ftp://push.example.com/x", keys: good.keys.json },
      { endpoint: "https://10.0.0.1/x", keys: good.keys.json },
      { endpoint: "https://169.254.169.254/x", keys: good.keys.json },
      { endpoint: "https://user:pw@push.example.com/x", keys: good.keys.json },
      { endpoint: "not a url", keys: good.keys.json },
      { endpoint: good.endpoint },
      { endpoint: good.endpoint, keys: { ...good.keys.json, p256dh: offCurve } },
      { endpoint: good.endpoint, keys: { ...good.keys.json, p256dh: good.keys.json.p256dh.slice(1) } },
      { endpoint: good.endpoint, keys: { ...good.keys.json, auth: randomBytes(12).toString("base64url") } },
      { endpoint: good.endpoint, keys: good.keys.json, userAgent: "x".repeat(201) },
    ];
    for (const input of bad) await rejectsWith(pwa(alice).subscribe(input), Code.InvalidArgument);
    await rejectsWith(pwa(alice).unsubscribe({}), Code.InvalidArgument);
    await rejectsWith(pwa(alice).unsubscribe({ target: { case: "subscriptionId", value: "nope" } }), Code.InvalidArgument);
    // Without local development, plain http is refused, on loopback and anywhere else.
    const strict = await startTestCore(testConfig, { database: t.database });
    try {
      await rejectsWith(strict.client(PwaService, { session: alice.token }).subscribe({ endpoint: good.endpoint, keys: good.keys.json }), Code.InvalidArgument);
      await rejectsWith(
        strict.client(PwaService, { session: alice.token }).subscribe({ endpoint: "http://push.example.com/x", keys: good.keys.json }),
        Code.InvalidArgument,
      );
    } finally {
      await strict.close();
    }
    assert.deepEqual((await pwa(alice).listSubscriptions({})).subscriptions, []);
  });
});
