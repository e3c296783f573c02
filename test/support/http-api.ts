/** A script's use of the HTTP API, as the router suites make it: an API key, and calls with it. */
import assert from "node:assert/strict";
import type { TestOutpost } from "./outpost.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

/** One call of /api/http with the script's key: the status and the parsed body (undefined when empty). */
export type HttpApi = (method: "GET" | "POST", path: string, body?: unknown) => Promise<{ status: number; body: Json }>;

export function httpApi(t: TestOutpost, key: string): HttpApi {
  return async (method, path, body) => {
    const headers: Record<string, string> = { "x-api-key": key };
    if (body !== undefined) headers["content-type"] = "application/json";
    const res = await fetch(`${t.baseUrl}/api/http/${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };
}

/**
 * As a person starting a script would: signs up owner@example.com over HTTP, makes an API key with
 * that session, and creates the organization "acme" with the key.
 */
export async function scriptInOrganization(t: TestOutpost, name = "owner"): Promise<{ key: string; api: HttpApi }> {
  const signUp = await fetch(`${t.baseUrl}/sign-up`, {
    method: "POST",
    headers: { "content-type": "application/json", origin: "http://localhost:3000" },
    body: JSON.stringify({ email: "owner@example.com", password: "a long password", name }),
  });
  const cookie = signUp.headers.get("set-cookie")!.split(";")[0];
  const created = await fetch(`${t.baseUrl}/api/http/auth/createApiKey`, {
    method: "POST",
    headers: { "content-type": "application/json", cookie, origin: "http://localhost:3000" },
    body: JSON.stringify({ name: "script", expiresInDays: 30 }),
  });
  const key = ((await created.json()) as Json).key as string;
  const api = httpApi(t, key);
  assert.equal((await api("POST", "organizations/createOrganization", { name: "Acme", slug: "acme" })).status, 200);
  return { key, api };
}
