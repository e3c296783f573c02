/**
 * The dashboard as an installable app, in headless Chromium: the manifest and icons, the service
 * worker (active, keeping only the app shell, answering with the offline page once Outpost is
 * gone) and the push switch on the Security page, with Web Push delivered to a local push endpoint
 * that decrypts and verifies each message.
 *
 * What Chromium cannot do here: its PushManager registers with Google's push service (FCM), out of
 * reach from this machine — in a normal (incognito) test context Chromium refuses push outright,
 * and in a persistent profile `subscribe()` waits on FCM forever. So the subscription's keys are
 * made by the test exactly as a browser makes them (ECDH P-256 and a 16-byte auth secret). One test
 * drives the page's switch with PushManager answering from the local push service instead of FCM;
 * the others send the subscription to pwa/subscribe from the signed-in page, as push.js does.
 */
import assert from "node:assert/strict";
import { createClient } from "@connectrpc/connect";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { IdentityService } from "../../gen/outpost/identity/v1/identity_service_pb.js";
import { startListeningOutpost, type TestOutpost } from "../support/outpost.ts";
import { assertAccessible, launchChromium } from "../support/browser.ts";
import { startPushEndpoint, type PushEndpoint } from "../support/push-endpoint.ts";

const desktop = { width: 1280, height: 800 };
const password = "correct horse battery staple";
const subject = "mailto:ops@outpost.test";

/** Width and height from a PNG's IHDR. */
function pngSize(bytes: Buffer): string {
  assert.equal(bytes.subarray(1, 4).toString("ascii"), "PNG");
  return `${bytes.readUInt32BE(16)}x${bytes.readUInt32BE(20)}`;
}

describe("dashboard: installable app, service worker and push notifications", function () {
  this.timeout(120_000);
  let t: TestOutpost | undefined;
  let base: string;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let push: PushEndpoint;

  before(async () => {
    push = await startPushEndpoint();
    // Local development: the local push endpoint is plain http on loopback.
    t = await startListeningOutpost({ ALLOW_LOCAL_OUTBOUND: "true", VAPID_SUBJECT: subject });
    base = t.baseUrl;
    const identity = createClient(IdentityService, t.outpost.runtime.core.transport());
    await identity.createUser({ email: "pia@example.com", password, name: "Pia" });
    browser = await launchChromium();
    context = await browser.newContext({ viewport: desktop });
    context.setDefaultTimeout(15_000);
    page = await context.newPage();
    await page.goto(`${base}/app/account/security`);
    await page.getByLabel("Email").fill("pia@example.com");
    await page.getByLabel("Password").fill(password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL((u) => u.pathname === "/app/account/security");
  });
  after(async () => {
    await browser?.close();
    await t?.close();
    await push?.close();
  });
  afterEach(() => assert.deepEqual(push.problems, []));

  /** A call of the HTTP API from the signed-in page, as push.js makes it. */
  function fromPage(procedure: string, body?: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
    return page.evaluate(
      `fetch("/api/http/pwa/${procedure}", ${JSON.stringify(body === undefined ? { credentials: "same-origin" } : { method: "POST", credentials: "same-origin", headers: { "content-type": "application/json" }, body: JSON.stringify(body) })})
        .then((r) => r.json().then((json) => ({ status: r.status, json })))`,
    );
  }

  it("links a valid web app manifest with 192, 512 and maskable icons, under a policy that allows it", async () => {
    const response = await page.reload();
    assert.match(response?.headers()["content-security-policy"] ?? "", /manifest-src 'self'; worker-src 'self'/);
    assert.equal(await page.locator('link[rel="manifest"]').getAttribute("href"), "/app/manifest.webmanifest");
    const res = await fetch(`${base}/app/manifest.webmanifest`);
    assert.equal(res.headers.get("content-type"), "application/manifest+json; charset=utf-8");
    const manifest = (await res.json()) as {
      name: string;
      start_url: string;
      scope: string;
      display: string;
      icons: Array<{ src: string; sizes: string; type: string; purpose: string }>;
    };
    assert.equal(manifest.name, "Outpost");
    assert.equal(manifest.display, "standalone");
    assert.ok(new URL(manifest.start_url, base).pathname.startsWith(new URL(manifest.scope, base).pathname), "start_url is within the scope");
    assert.equal((await fetch(new URL(manifest.start_url, base), { redirect: "manual" })).status, 302, "start_url is a page (to sign in, here)");
    assert.deepEqual(
      manifest.icons.map((i) => `${i.sizes} ${i.purpose}`),
      ["192x192 any", "512x512 any", "512x512 maskable"],
    );
    for (const icon of manifest.icons) {
      const image = await fetch(new URL(icon.src, base));
      assert.equal(image.headers.get("content-type"), "image/png");
      assert.equal(pngSize(Buffer.from(await image.arrayBuffer())), icon.sizes);
    }
  });

  it("serves the service worker for the dashboard's scope; Chromium runs it, finds the app installable, and the worker keeps only the app shell", async () => {
    const res = await fetch(`${base}/app/sw.js`);
    assert.equal(res.headers.get("content-type"), "text/javascript; charset=utf-8");
    assert.equal(res.headers.get("cache-control"), "no-cache");
    assert.equal(res.headers.get("content-security-policy"), "default-src 'none'; connect-src 'self'; img-src 'self'");
    const state = await page.evaluate<{ state: string; scope: string }>(`navigator.serviceWorker.ready.then((r) => new Promise((resolve) => {
      const done = () => resolve({ state: r.active.state, scope: r.scope });
      if (r.active.state === "activated") done(); else r.active.addEventListener("statechange", () => r.active.state === "activated" && done());
    }))`);
    assert.deepEqual(state, { state: "activated", scope: `${base}/app/` });
    await page.reload();
    assert.equal(await page.evaluate("Boolean(navigator.serviceWorker.controller)"), true, "the page is controlled after a reload");
    // Chromium's own reading of the manifest: no errors, and nothing stands in the way of installing.
    const cdp = await context.newCDPSession(page);
    const read = (await cdp.send("Page.getAppManifest")) as { url: string; errors: unknown[] };
    assert.deepEqual([read.url, read.errors], [`${base}/app/manifest.webmanifest`, []]);
    // (A test context is incognito, where Chromium installs no app: that is the one objection allowed.)
    const { installabilityErrors } = (await cdp.send("Page.getInstallabilityErrors")) as { installabilityErrors: Array<{ errorId: string }> };
    assert.deepEqual(
      installabilityErrors.map((e) => e.errorId).filter((id) => id !== "in-incognito"),
      [],
    );
    await cdp.detach();
    // Pages and API answers pass through the worker: none may land in its cache.
    await page.goto(`${base}/app/organizations`);
    await fromPage("listSubscriptions");
    await page.goto(`${base}/app/account/security`);
    const cached = await page.evaluate<string[]>(
      `caches.keys().then((names) => Promise.all(names.map((n) => caches.open(n).then((c) => c.keys())))).then((all) => all.flat().map((r) => new URL(r.url).pathname))`,
    );
    assert.ok(cached.includes("/app/offline") && cached.includes("/app/assets/dashboard.css"), JSON.stringify(cached));
    for (const path of cached) assert.ok(path === "/app/offline" || path.startsWith("/app/assets/"), `only the shell is cached, not ${path}`);
  });

  it("has a push switch on the Security page; Chromium's own push service is out of reach, so it stays off and says why", async () => {
    await context.grantPermissions(["notifications"], { origin: base });
    await page.reload();
    const toggle = page.getByRole("checkbox", { name: "Push notifications on this browser" });
    await page.locator("#push-status").filter({ hasText: "Off: this browser receives no push notifications." }).waitFor();
    await assertAccessible(page, "security with the push switch");
    await toggle.check();
    // The browser refuses PushManager.subscribe here (see the header): the switch goes back off.
    await page
      .locator("#push-status")
      .filter({ hasNotText: /Turning on|Off:|On:/ })
      .waitFor();
    assert.equal(await toggle.isChecked(), false);
    assert.equal(await page.getByRole("button", { name: "Send a test notification" }).isDisabled(), true);
  });

  it("turns push on and off with the switch, push.js in Chromium talking to a local push service in place of Chromium's own", async () => {
    // Only the browser's push service is replaced: PushManager hands back a subscription at the
    // local endpoint, with keys the endpoint decrypts with, and records the applicationServerKey the
    // page subscribed with. Everything else is the page's own code in Chromium.
    const s = push.subscription();
    const shimmed = await browser.newContext({ viewport: desktop });
    shimmed.setDefaultTimeout(15_000);
    await shimmed.grantPermissions(["notifications"], { origin: base });
    await shimmed.addInitScript(
      ({ endpoint, keys }: { endpoint: string; keys: { p256dh: string; auth: string } }) => {
        const w = globalThis as unknown as { PushManager: { prototype: Record<string, unknown> }; __push: { serverKey: string; ended: number } };
        w.__push = { serverKey: "", ended: 0 };
        let current: unknown = null;
        const make = (serverKey: ArrayBuffer) => ({
          endpoint,
          options: { applicationServerKey: serverKey, userVisibleOnly: true },
          toJSON: () => ({ endpoint, keys }),
          unsubscribe: () => {
            current = null;
            w.__push.ended++;
            return Promise.resolve(true);
          },
        });
        w.PushManager.prototype.getSubscription = () => Promise.resolve(current);
        w.PushManager.prototype.subscribe = (options: { applicationServerKey: Uint8Array }) => {
          const bytes = new Uint8Array(options.applicationServerKey);
          w.__push.serverKey = btoa(String.fromCharCode(...bytes))
            .replace(/\+/g, "-")
            .replace(/\//g, "_")
            .replace(/=+$/, "");
          current = make(bytes.buffer);
          return Promise.resolve(current);
        };
      },
      { endpoint: s.endpoint, keys: s.keys.json },
    );
    const tab = await shimmed.newPage();
    try {
      await tab.goto(`${base}/app/account/security`);
      await tab.getByLabel("Email").fill("pia@example.com");
      await tab.getByLabel("Password").fill(password);
      await tab.getByRole("button", { name: "Sign in" }).click();
      await tab.waitForURL((u) => u.pathname === "/app/account/security");
      const toggle = tab.getByRole("checkbox", { name: "Push notifications on this browser" });
      await tab.locator("#push-status").filter({ hasText: "Off:" }).waitFor();
      await toggle.check();
      await tab.locator("#push-status").filter({ hasText: "On: this browser receives push notifications." }).waitFor();
      const vapidKey = (await fromPage("getPushConfig")).json.vapidPublicKey;
      assert.equal(await tab.evaluate("window.__push.serverKey"), vapidKey, "the page subscribed with the deployment's VAPID key");
      const saved = (await fromPage("listSubscriptions")).json.subscriptions as Array<{ endpoint: string }>;
      assert.deepEqual(
        saved.map((x) => x.endpoint),
        [s.endpoint],
      );

      const before = push.received.length;
      await tab.getByRole("button", { name: "Send a test notification" }).click();
      await tab
        .locator("#push-status")
        .filter({ hasText: /^Sent to/ })
        .waitFor();
      assert.equal(await tab.locator("#push-status").textContent(), "Sent to 1 of 1 browsers.");
      assert.equal(push.received.length, before + 1);
      const got = push.received.at(-1)!;
      assert.equal(got.path, new URL(s.endpoint).pathname);
      assert.equal(got.message.title, "Outpost", "the endpoint decrypted the message with the subscription's keys");
      assert.equal(got.vapid.key, vapidKey);

      await toggle.uncheck();
      await tab.locator("#push-status").filter({ hasText: "Off: this browser receives no push notifications." }).waitFor();
      assert.equal(await tab.evaluate("window.__push.ended"), 1, "the browser's subscription ended too");
      assert.deepEqual((await fromPage("listSubscriptions")).json.subscriptions, []);
    } finally {
      await shimmed.close();
    }
  });

  it("saves a browser's subscription from the page and delivers a test push to the local push endpoint, which decrypts it", async () => {
    const s = push.subscription();
    const subscribed = await fromPage("subscribe", { endpoint: s.endpoint, keys: s.keys.json, userAgent: "Chromium on Linux" });
    assert.equal(subscribed.status, 200, JSON.stringify(subscribed.json));
    const sent = await fromPage("sendTestPush", {});
    assert.equal(sent.status, 200);
    const outcomes = sent.json.outcomes as Array<{ delivered: boolean; status: number; error: string }>;
    assert.deepEqual(
      outcomes.map((o) => [o.delivered, o.status]),
      [[true, 201]],
      JSON.stringify(outcomes),
    );
    const got = push.received.at(-1)!;
    assert.equal(got.message.title, "Outpost");
    assert.equal(got.vapid.sub, subject);
    assert.equal(got.vapid.aud, push.origin);
    assert.equal(got.vapid.key, (await fromPage("getPushConfig")).json.vapidPublicKey);

    // What the push service would hand the browser, handed to the service worker through DevTools:
    // it shows the notification.
    const cdp = await context.newCDPSession(page);
    const registered = new Promise<string>((resolve) =>
      cdp.on("ServiceWorker.workerRegistrationUpdated", (e: { registrations: Array<{ registrationId: string; scopeURL: string }> }) => {
        const ours = e.registrations.find((r) => r.scopeURL === `${base}/app/`);
        if (ours) resolve(ours.registrationId);
      }),
    );
    await cdp.send("ServiceWorker.enable");
    await cdp.send("ServiceWorker.deliverPushMessage", { origin: base, registrationId: await registered, data: JSON.stringify(got.message) });
    const shown = await page.evaluate<Array<{ title: string; body: string; url: string }>>(`navigator.serviceWorker.ready.then(async (r) => {
      for (let i = 0; i < 50; i++) {
        const list = await r.getNotifications();
        if (list.length) return list.map((n) => ({ title: n.title, body: n.body, url: n.data.url }));
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      return [];
    })`);
    assert.deepEqual(shown, [{ title: "Outpost", body: got.message.body, url: "/app/account/security" }]);
    await cdp.detach();

    // Bad input is a 400 naming the field, never a 500.
    const bad = await fromPage("subscribe", { endpoint: "https://10.0.0.1/push", keys: s.keys.json });
    assert.equal(bad.status, 400);
    assert.equal(bad.json.code, "invalid_argument");
    assert.match(String(bad.json.message), /endpoint: must not point inside a private network/);
    assert.equal((await fromPage("subscribe", { endpoint: s.endpoint, keys: { p256dh: "AAAA", auth: s.keys.json.auth } })).status, 400);

    // The list on the Security page, and removing the browser from it (after the dialog).
    await page.reload();
    const list = page.getByRole("region", { name: "Browsers that receive push notifications" });
    await list.getByRole("row", { name: /Chromium on Linux/ }).waitFor();
    await assertAccessible(page, "security with a push subscription");
    await list.getByRole("button", { name: "Remove Chromium on Linux from push notifications" }).click();
    await page.getByRole("dialog", { name: "Stop push notifications to Chromium on Linux?" }).getByRole("button", { name: "Remove" }).click();
    await page.getByRole("status").filter({ hasText: "That browser gets no more push notifications." }).waitFor();
    assert.deepEqual((await fromPage("listSubscriptions")).json.subscriptions, []);
  });

  it("shows the offline page, with its look, when Outpost cannot be reached", async () => {
    await t!.close();
    t = undefined;
    await page.goto(`${base}/app/organizations`);
    await page.getByRole("heading", { name: "You are offline" }).waitFor();
    assert.equal(
      await page.evaluate(
        "getComputedStyle(document.querySelector('.topbar')).display !== '' && document.styleSheets.length > 0 && document.styleSheets[0].cssRules.length > 0",
      ),
      true,
      "the stylesheet came from the shell cache",
    );
    await assertAccessible(page, "offline page");
  });
});
