/**
 * PwaService: the signed-in user's Web Push subscriptions, for themselves only (another user's
 * subscription looks absent), and the deployment's VAPID public key. Subscribing and
 * unsubscribing are activity events of the account.
 */
import { countTestSend } from "../ratelimit/test-sends.ts";
import type { ServiceImpl } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { PushSubscriptionSchema, PwaService, type PushSubscription } from "../../gen/outpost/pwa/v1/pwa_service_pb.js";
import { entityManager, requireUser } from "../context.ts";
import type { CoreDeps } from "../deps.ts";
import { fail } from "../errors.ts";
import { recordActivity } from "../activity/record.ts";
import { inTransaction } from "../db/sql.ts";
import { deleteSubscription, lockAndCountOtherSubscriptions, listSubscriptions, upsertSubscription, type SubscriptionRow } from "./push-queries.ts";
import { sendPushToUser } from "./push.ts";
import { checkSubscription } from "./subscription-check.ts";

type Impl = ServiceImpl<typeof PwaService>;

/** Browsers per user: enough for every device a person has, not a table anyone can fill. */
export const maxSubscriptionsPerUser = 20;

function toProto(row: SubscriptionRow): PushSubscription {
  return create(PushSubscriptionSchema, {
    id: row.id,
    endpoint: row.endpoint,
    userAgent: row.user_agent,
    createdAt: timestampFromDate(row.created_at),
    lastSuccessAt: row.last_success_at ? timestampFromDate(row.last_success_at) : undefined,
  });
}

/** The endpoint's origin, which the activity log keeps (the full URL is a capability of the browser). */
const pushService = (endpoint: string) => new URL(endpoint).origin;

const getPushConfig =
  (deps: CoreDeps): Impl["getPushConfig"] =>
  async (_req, ctx) => {
    requireUser(ctx);
    const keys = await deps.push.vapid.get(deps.statements.on(entityManager(ctx)), deps.clock.now());
    return { vapidPublicKey: keys.publicKey };
  };

const subscribe =
  (deps: CoreDeps): Impl["subscribe"] =>
  async (req, ctx) => {
    const caller = requireUser(ctx);
    const input = checkSubscription(req, (url) => deps.outbound.urlProblem(url));
    const row = await entityManager(ctx).transactional(async (tx) => {
      const query = inTransaction(tx);
      // Counted under the user's row lock, before the insert: concurrent subscribes of one user
      // wait for each other here, so together they cannot pass the cap.
      const count = await lockAndCountOtherSubscriptions(query, caller.user.id, input.endpoint);
      if (count >= maxSubscriptionsPerUser) {
        throw fail("failed_precondition", `at most ${maxSubscriptionsPerUser} browsers can receive push notifications; unsubscribe one first`);
      }
      const saved = await upsertSubscription(
        query,
        { userId: caller.user.id, sessionId: caller.credential.kind === "session" ? caller.credential.id : null, ...input },
        deps.clock.now(),
      );
      const moved = saved.previous_user_id !== null && saved.previous_user_id !== caller.user.id;
      recordActivity(tx, caller, {
        // A browser that pushed to another account now pushes to this one: worth a look.
        action: moved ? "push_subscription.moved" : "push_subscription.created",
        targetType: "push_subscription",
        targetId: saved.id,
        details: {
          push_service: pushService(saved.endpoint),
          ...(saved.user_agent && { user_agent: saved.user_agent }),
          ...(moved && { moved_from: "another account" }),
        },
      });
      return saved;
    });
    return { subscription: toProto(row) };
  };

const unsubscribe: Impl["unsubscribe"] = async (req, ctx) => {
  const caller = requireUser(ctx);
  const target = req.target.case === "subscriptionId" ? { id: req.target.value } : { endpoint: req.target.value ?? "" };
  await entityManager(ctx).transactional(async (tx) => {
    const removed = await deleteSubscription(inTransaction(tx), caller.user.id, target);
    if (!removed) throw fail("not_found", "no such push subscription of yours");
    recordActivity(tx, caller, {
      action: "push_subscription.deleted",
      targetType: "push_subscription",
      targetId: removed.id,
      details: { push_service: pushService(removed.endpoint) },
    });
  });
  return {};
};

const listMine =
  (deps: CoreDeps): Impl["listSubscriptions"] =>
  async (_req, ctx) => {
    const caller = requireUser(ctx);
    const rows = await listSubscriptions(deps.statements.on(entityManager(ctx)), caller.user.id);
    return { subscriptions: rows.map(toProto) };
  };

const sendTestPush =
  (deps: CoreDeps): Impl["sendTestPush"] =>
  async (_req, ctx) => {
    const caller = requireUser(ctx);
    await countTestSend(deps.rateLimits, caller.user.id);
    const outcomes = await sendPushToUser(deps, caller.user.id, {
      title: "Outpost",
      body: "Test notification: push notifications reach this browser.",
      url: "/app/account/security",
      tag: "outpost-test",
    });
    return { outcomes };
  };

export function createPwaService(deps: CoreDeps): Impl {
  return {
    getPushConfig: getPushConfig(deps),
    subscribe: subscribe(deps),
    unsubscribe,
    listSubscriptions: listMine(deps),
    sendTestPush: sendTestPush(deps),
  };
}
