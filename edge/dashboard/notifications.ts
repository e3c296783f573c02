/**
 * The signed-in person's notifications: the list (newest first, a page at a time), marking read,
 * which kinds they want and which pushed, and the bell's live count as server-sent events relayed
 * from core's `notifications/watchUnreadCount` (dashboard.js keeps the top bar's badge current).
 */
import type { Router } from "@koa/router";
import type { Context } from "koa";
import { Code, ConnectError } from "@connectrpc/connect";
import { NotificationKind, type Notification } from "../../gen/outpost/notifications/v1/notifications_service_pb.js";
import { readSessionCookie } from "../cookies.ts";
import { answerError, relayStream } from "../event-streams.ts";
import { html, type Html } from "../html.ts";
import { action, done, noticeOf, page, render, type DashboardDeps, type Viewer } from "./context.ts";
import { coreFor } from "./core.ts";
import { when } from "./format.ts";
import { choiceGroup, postForm } from "./forms.ts";

export const notificationsPath = "/app/notifications";

const kinds: ReadonlyArray<{ kind: NotificationKind; value: string; label: string }> = [
  { kind: NotificationKind.MEMBERSHIP, value: "membership", label: "Your organizations: added, removed, a role changed" },
  { kind: NotificationKind.API_KEY, value: "api_key", label: "Your API keys: one expires within a week" },
  { kind: NotificationKind.ALERT, value: "alert", label: "Alerts that name the dashboard" },
  { kind: NotificationKind.ACCESS_REQUEST, value: "access_request", label: "Server access requests: a member asks, or yours was approved or denied" },
];

function item(n: Notification, token: string): Html {
  const title = n.link ? html`<a href="${n.link}">${n.title}</a>` : html`${n.title}`;
  const mark = n.readAt
    ? html`<span class="muted">Read</span>`
    : postForm(
        `${notificationsPath}/read`,
        token,
        html`<input type="hidden" name="id" value="${n.id}"><button type="submit" class="btn small">Mark read<span class="sr-only">: ${n.title}</span></button>`,
        html` class="inline"`,
      );
  return html`<li class="notification${n.readAt ? "" : " unread"}">
<p class="notification-title">${n.readAt ? "" : html`<span class="badge">New</span> `}${title}</p>
${n.body ? html`<p>${n.body}</p>` : ""}
<div class="notification-meta muted">${when(n.createdAt)} ${mark}</div>
</li>`;
}

async function notificationsPage(ctx: Context, v: Viewer): Promise<void> {
  const cursor = typeof ctx.query.cursor === "string" && ctx.query.cursor ? ctx.query.cursor : undefined;
  const [list, { preferences }] = await Promise.all([v.core.notifications.listNotifications({ limit: 30, cursor }), v.core.notifications.getNotificationPreferences({})]);
  const shown = new Set(kinds.filter((k) => preferences.find((p) => p.kind === k.kind)?.inApp ?? true).map((k) => k.value));
  const pushed = new Set(kinds.filter((k) => preferences.find((p) => p.kind === k.kind)?.push).map((k) => k.value));
  const options = kinds.map(({ value, label }) => ({ value, label }));
  render(ctx, v, {
    title: "Notifications",
    area: "notifications",
    notice: noticeOf(ctx),
    body: html`<section aria-labelledby="list-heading">
<h2 id="list-heading" class="sr-only">Your notifications</h2>
${v.unread ? html`<div class="actions">${postForm(`${notificationsPath}/read-all`, v.formToken, html`<button type="submit" class="btn">Mark all read</button>`, html` class="inline"`)}</div>` : ""}
${list.notifications.length ? html`<ul class="notifications">${list.notifications.map((n) => item(n, v.formToken))}</ul>` : html`<p class="empty">${cursor ? "No older notifications." : "Nothing yet. You are told here when someone adds you to an organization or changes your role, and when one of your API keys is about to expire."}</p>`}
${list.nextCursor ? html`<p><a class="btn ghost" href="${notificationsPath}?cursor=${encodeURIComponent(list.nextCursor)}">Older notifications</a></p>` : ""}
</section>
<section aria-labelledby="prefs-heading">
<h2 id="prefs-heading">What you are told</h2>
${postForm(
  `${notificationsPath}/preferences`,
  v.formToken,
  html`${choiceGroup({ name: "show", legend: "Show in the dashboard", type: "checkbox", options, checked: shown, id: "pref-show", hint: "A kind you turn off is not kept at all." })}
${choiceGroup({ name: "push", legend: "Also send to your browsers as push notifications", type: "checkbox", options, checked: pushed, id: "pref-push", hint: "Of the kinds shown in the dashboard, to the browsers where you turned push on." })}
<div class="actions"><button type="submit" class="btn primary">Save</button></div>`,
  html` class="panel stack" aria-labelledby="prefs-heading"`,
)}
</section>`,
  });
}

/** The bell's count as events: `unread` with {"unread": n} now and at each change. */
function bellEvents(ctx: Context, deps: DashboardDeps): Promise<void> {
  return relayStream<{ unread: number }>(ctx, deps.shutdown, {
    what: "notification bell",
    retryMs: 5_000,
    lifetimeMs: 10 * 60_000,
    open: (signal) => {
      if (!readSessionCookie(ctx.req.headers, deps.secureCookies)) throw new ConnectError("sign in again", Code.Unauthenticated);
      return coreFor(deps.calls, ctx).notifications.watchUnreadCount({}, { signal });
    },
    refused: (ctx, error) => answerError(ctx, error, "notification bell"),
    write: (res, { unread }) => void res.write(`event: unread\ndata: ${JSON.stringify({ unread })}\n\n`),
  });
}

export function notificationRoutes(router: Router, deps: DashboardDeps): void {
  router.get(notificationsPath, page(deps, notificationsPage));
  router.get(`${notificationsPath}/events`, (ctx) => bellEvents(ctx, deps));
  router.post(
    `${notificationsPath}/read`,
    action(deps, async (ctx, v, form) => {
      const ids = form.getAll("id").filter((id) => /^[0-9a-f-]{36}$/.test(id));
      if (ids.length) await v.core.notifications.markRead({ notificationIds: ids.slice(0, 100) });
      done(ctx, notificationsPath);
    }),
  );
  router.post(
    `${notificationsPath}/read-all`,
    action(deps, async (ctx, v) => {
      await v.core.notifications.markAllRead({});
      done(ctx, notificationsPath);
    }),
  );
  router.post(
    `${notificationsPath}/preferences`,
    action(deps, async (ctx, v, form) => {
      const show = new Set(form.getAll("show"));
      const push = new Set(form.getAll("push"));
      await v.core.notifications.updateNotificationPreferences({
        preferences: kinds.map((k) => ({ kind: k.kind, inApp: show.has(k.value), push: push.has(k.value) })),
      });
      done(ctx, notificationsPath, "preferences-saved");
    }),
  );
}
