/**
 * Helpers for the Account OAuth suites: a platform admin and an app registered through the HTTP
 * API, users signed up through /sign-up, and a browser without a browser — a cookie jar that
 * follows redirects by hand and fills the sign-in and consent forms the way a person would.
 */
import assert from "node:assert/strict";
import { createClient } from "@connectrpc/connect";
import { IdentityService } from "../../gen/outpost/identity/v1/identity_service_pb.js";
import type { TestOutpost } from "./outpost.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

/** A platform admin's API key, made through core's IdentityService (as `outpost user create --admin` does). */
export async function adminApiKey(t: TestOutpost, email = "root@example.com"): Promise<string> {
  const identity = createClient(IdentityService, t.outpost.runtime.core.transport());
  await identity.createUser({ email, password: "a long admin password", name: "Root", platformAdmin: true });
  return (await identity.issueApiKey({ email, name: "admin tests" })).key;
}

/** POST /api/http/<path> with an API key; asserts 200. */
export async function apiPost(t: TestOutpost, key: string, path: string, body: unknown): Promise<Json> {
  const res = await fetch(`${t.baseUrl}/api/http/${path}`, {
    method: "POST",
    headers: { "x-api-key": key, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as Json;
  assert.equal(res.status, 200, JSON.stringify(json));
  return json;
}

export interface RegisteredApp {
  clientId: string;
  clientSecret: string;
}

export async function registerApp(t: TestOutpost, adminKey: string, redirectUris: string[], extra: Record<string, unknown> = {}): Promise<RegisteredApp> {
  const res = await apiPost(t, adminKey, "admin/createAccountOAuthClient", { name: "Wiki", redirectUris, ...extra });
  return { clientId: res.clientId, clientSecret: res.clientSecret };
}

const decode = (s: string) =>
  s
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&amp;/g, "&");

/** The value of the hidden input `name` in a page. */
export function hiddenField(html: string, name: string): string {
  const match = new RegExp(`name="${name}" value="([^"]*)"`).exec(html);
  assert.ok(match, `no field ${name} in the page:\n${html}`);
  return decode(match[1]);
}

/** A browser for one person: cookies per origin (only the Outpost origin matters here), redirects followed by hand. */
export class FormBrowser {
  readonly cookies = new Map<string, string>();
  readonly baseUrl: string;

  constructor(baseUrl: string) {
    this.baseUrl = baseUrl;
  }

  #cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ");
  }

  #keep(res: Response): void {
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attributes] = line.split(";");
      const eq = pair.indexOf("=");
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      if (!value || attributes.some((a) => /^\s*max-age=0\s*$/i.test(a))) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  /** One request to Outpost (same-origin, as a page's form would send it); no redirect followed. */
  async request(url: string | URL, init: { method?: string; form?: Record<string, string> } = {}): Promise<Response> {
    const target = new URL(url, this.baseUrl);
    assert.equal(target.origin, new URL(this.baseUrl).origin, `the browser left Outpost for ${target}`);
    const res = await fetch(target, {
      method: init.method ?? (init.form ? "POST" : "GET"),
      redirect: "manual",
      headers: {
        ...(this.cookies.size ? { cookie: this.#cookieHeader() } : {}),
        ...(init.form ? { "content-type": "application/x-www-form-urlencoded", origin: target.origin, "sec-fetch-site": "same-origin" } : {}),
      },
      body: init.form ? new URLSearchParams(init.form) : undefined,
    });
    this.#keep(res);
    return res;
  }

  /**
   * Goes to `url` and follows redirects while they stay on Outpost; returns the last Outpost
   * response and, when a redirect leaves Outpost (back to the app), that URL.
   */
  async visit(url: string | URL): Promise<{ res: Response; url: URL; left?: URL }> {
    let current = new URL(url, this.baseUrl);
    for (let hops = 0; hops < 10; hops++) {
      const res = await this.request(current);
      if (res.status < 300 || res.status >= 400) return { res, url: current };
      const next = new URL(res.headers.get("location")!, current);
      if (next.origin !== new URL(this.baseUrl).origin) return { res, url: current, left: next };
      current = next;
    }
    throw new Error("too many redirects");
  }

  /** Submits a form and follows where it leads, like {@link visit}. */
  async submit(action: string, form: Record<string, string>): Promise<{ res: Response; url: URL; left?: URL }> {
    const res = await this.request(action, { form });
    if (res.status < 300 || res.status >= 400) return { res, url: new URL(action, this.baseUrl) };
    const next = new URL(res.headers.get("location")!, this.baseUrl);
    if (next.origin !== new URL(this.baseUrl).origin) return { res, url: new URL(action, this.baseUrl), left: next };
    return this.visit(next);
  }

  /** Creates an account through the sign-up page. */
  async signUp(email: string, password: string, name: string): Promise<void> {
    const page = await this.visit("/sign-up");
    const html = await page.res.text();
    const done = await this.request("/sign-up", { form: { form_token: hiddenField(html, "form_token"), name, email, password } });
    assert.equal(done.status, 303, await done.text());
  }

  /** Fills the sign-in page at `url` (which carries return_to) and follows where it leads. */
  async signInOn(page: { res: Response; url: URL }, email: string, password: string) {
    assert.equal(page.url.pathname, "/sign-in", `expected the sign-in page, got ${page.url}`);
    const html = await page.res.text();
    const returnTo = page.url.searchParams.get("return_to") ?? "";
    return this.submit("/sign-in", { form_token: hiddenField(html, "form_token"), email, password, ...(returnTo && { return_to: returnTo }) });
  }

  /** Answers the consent page (the response of a visit that landed on it). */
  async decide(page: { res: Response }, decision: "allow" | "deny") {
    const html = await page.res.text();
    return this.submit("/api/auth/oauth2/consent", { form_token: hiddenField(html, "form_token"), request: hiddenField(html, "request"), decision });
  }
}
