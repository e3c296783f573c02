/**
 * The HTTP API suites' Outpost: three accounts, each signed up through the pages with an API key
 * (owner@, member@ and outsider@example.com; the owner's session cookie kept too), and `api`, a
 * call through real HTTP as a script makes it.
 */
import assert from "node:assert/strict";
import { startTestOutpost, type TestOutpost } from "../support/outpost.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- JSON from the HTTP API, read field by field
export type Json = any;

/** The browser origin the accounts' pages are used from. */
export const origin = "http://localhost:3000";

/** Starts the Outpost in the calling suite's `before` and stops it in its `after`; the helpers use it. */
export function useHttpApiOutpost() {
  let t: TestOutpost;
  let ownerKey: string;
  let ownerCookie: string;
  let memberKey: string;
  let outsiderKey: string;

  const api = async (
    method: "GET" | "POST" | "PUT" | "DELETE",
    path: string,
    options: { key?: string; cookie?: string; body?: unknown; raw?: string; headers?: Record<string, string> } = {},
  ): Promise<{ status: number; body: Json; headers: Headers }> => {
    const headers: Record<string, string> = { ...options.headers };
    if (options.key) headers["x-api-key"] = options.key;
    if (options.cookie) headers.cookie = options.cookie;
    let body: string | undefined = options.raw;
    if (options.body !== undefined) {
      headers["content-type"] ??= "application/json";
      body = JSON.stringify(options.body);
    }
    const res = await fetch(`${t.baseUrl}/api/http/${path}`, { method, headers, body });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
  };

  async function account(email: string): Promise<{ cookie: string; key: string }> {
    const res = await fetch(`${t.baseUrl}/sign-up`, {
      method: "POST",
      headers: { "content-type": "application/json", origin },
      body: JSON.stringify({ email, password: "a long password", name: email.split("@")[0] }),
    });
    assert.equal(res.status, 201);
    const cookie = res.headers.get("set-cookie")!.split(";")[0];
    const created = await api("POST", "auth/createApiKey", { cookie, headers: { origin }, body: { name: "script", expiresInDays: 30 } });
    assert.equal(created.status, 200, JSON.stringify(created.body));
    return { cookie, key: created.body.key };
  }

  before(async () => {
    t = await startTestOutpost();
    const owner = await account("owner@example.com");
    ownerKey = owner.key;
    ownerCookie = owner.cookie;
    memberKey = (await account("member@example.com")).key;
    outsiderKey = (await account("outsider@example.com")).key;
  });
  after(async () => {
    await t?.close();
  });

  return {
    outpost: () => t,
    ownerKey: () => ownerKey,
    ownerCookie: () => ownerCookie,
    memberKey: () => memberKey,
    outsiderKey: () => outsiderKey,
    api,
  };
}
