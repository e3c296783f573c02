/**
 * Account → Security → Push notifications: this browser's switch (push.js subscribes with the
 * deployment's VAPID key and calls pwa/subscribe through /api/http with the session cookie) and
 * the list of the person's browsers that receive push, each removable without script.
 */
import type { Router } from "@koa/router";
import type { PushSubscription } from "../../gen/outpost/pwa/v1/pwa_service_pb.js";
import { action, confirmed, done, type DashboardDeps } from "./context.ts";
import { when } from "./format.ts";
import { dangerForm } from "./forms.ts";
import { html, type Html } from "../html.ts";
import { deviceName, securityPath } from "./account-sessions.ts";

/** The push service a subscription goes through, by its endpoint's host: enough to recognise it. */
function pushService(endpoint: string): string {
  try {
    return new URL(endpoint).host;
  } catch {
    return endpoint;
  }
}

function subscriptionRows(token: string, subscriptions: readonly PushSubscription[]): Html {
  return html`${subscriptions.map((s) => {
    const name = s.userAgent || "A browser";
    return html`<tr data-endpoint="${s.endpoint}"><td>${name}</td><td class="mono">${pushService(s.endpoint)}</td><td>${when(s.createdAt)}</td><td>${when(s.lastSuccessAt, "Not yet")}</td><td class="row-actions">${dangerForm(
      {
        action: `${securityPath}/push/${s.id}/remove`,
        token,
        label: "Remove",
        ariaLabel: `Remove ${name} from push notifications`,
        confirm: `Stop push notifications to ${name}?`,
        consequence: "That browser gets no more push notifications from Outpost until it is turned on there again.",
        buttonClass: "danger small",
      },
    )}</td></tr>`;
  })}`;
}

/** The section of the Security page; `userAgent` is this request's, to name this browser in the list. */
export function pushSection(token: string, subscriptions: readonly PushSubscription[], userAgent: string): Html {
  return html`<section aria-labelledby="push-heading">
<h2 id="push-heading">Push notifications</h2>
<p>Outpost can notify this browser even when no Outpost page is open. Each browser is turned on separately.</p>
<div class="panel stack" data-push data-device="${deviceName(userAgent)}">
<div class="choice"><input type="checkbox" id="push-toggle" disabled aria-describedby="push-status"> <label for="push-toggle">Push notifications on this browser</label>
<p class="hint" id="push-status" role="status">This needs JavaScript and a browser that supports push notifications.</p></div>
<div class="actions"><button type="button" class="btn" id="push-test" disabled>Send a test notification</button></div>
</div>
${
  subscriptions.length
    ? html`<div class="table-wrap" role="region" tabindex="0" aria-label="Browsers that receive push notifications"><table><caption class="sr-only">Browsers that receive push notifications</caption><thead><tr><th scope="col">Browser</th><th scope="col">Push service</th><th scope="col">Since</th><th scope="col">Last delivered</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead><tbody>${subscriptionRows(token, subscriptions)}</tbody></table></div>`
    : html`<p class="empty">No browser receives push notifications from Outpost.</p>`
}
</section>`;
}

export function pushRoutes(router: Router, deps: DashboardDeps): void {
  router.post(
    `${securityPath}/push/:id/remove`,
    action(deps, async (ctx, v, form) => {
      const question = {
        title: "Stop push notifications to this browser?",
        consequence: "It gets no more push notifications from Outpost until it is turned on there again.",
        label: "Remove",
        cancel: securityPath,
      };
      if (!confirmed(ctx, v, form, question)) return;
      await v.core.pwa.unsubscribe({ target: { case: "subscriptionId", value: ctx.params.id } });
      done(ctx, securityPath, "push-removed");
    }),
  );
}
