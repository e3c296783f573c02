/**
 * The console suites' setting: a whole Outpost listening, an owner (Olive) and a member (Mo, granted
 * Survival) of "acme", three servers with real agents (the agent library over HTTP/2) — Survival
 * (online, a console that echoes, refuses or hangs as the command asks), Proxy SMP (no console) and
 * Cracked (offline mode) — and headless Chromium with the owner's context. A test fails on any page
 * error or failed subresource.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { createClient } from "@connectrpc/connect";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { IdentityService } from "../../gen/outpost/identity/v1/identity_service_pb.js";
import { Game } from "../../gen/outpost/servers/v1/resources_pb.js";
import { PlayerAuth, startAgent, type Agent, type AgentOptions, type ConsoleHandler } from "../../agent/client.ts";
import { startListeningOutpost, type TestOutpost } from "../support/outpost.ts";
import { assertAccessible, docsScreenshot, launchChromium } from "../support/browser.ts";
import { allActionNames } from "../support/grants.ts";
import { acceptOnOutpost } from "../support/fixtures.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- JSON from the HTTP API, read field by field
export type Json = any;

export const desktop = { width: 1280, height: 800 };
export const password = "correct horse battery staple";
export const steve = { name: "Steve", uuid: randomUUID() };
export const alex = { name: "Alex", uuid: randomUUID() };

/** Starts the setting in the calling suite's `before` and ends it in its `after`; the helpers use it. */
// eslint-disable-next-line max-lines-per-function -- the suites' shared setting and helpers, closing over their Outpost and browser
export function useConsoleSetting() {
  let t: TestOutpost;
  let browser: Browser;
  let owner: BrowserContext;
  let apiWithKey: (path: string, body: unknown) => Promise<Json>;
  const api = (path: string, body: unknown) => apiWithKey(path, body);
  const agents: Agent[] = [];
  const ran: string[] = [];
  const errors: string[] = [];
  const servers: Record<string, { id: string; agentKey: string }> = {};
  let member: { userId: string };

  /** The game's console: echoes, or refuses, or never answers ("hang"), as the command asks. */
  const consoleHandler: ConsoleHandler = async (command) => {
    ran.push(command);
    if (command === "list") return { success: true, output: [`There are 2 of a max of 20 players online: Steve, Alex`] };
    if (command === "hang") return new Promise(() => {});
    if (command.startsWith("busy")) return { success: false, output: [], error: "the console is busy" };
    return { success: true, output: [`[Server] ${command}`, "<b>not markup</b>"] };
  };

  function connect(name: string, playerAuth: PlayerAuth, extra: Partial<AgentOptions> = {}): Agent {
    const agent = startAgent({ url: t.baseUrl, key: servers[name].agentKey, game: Game.MINECRAFT, playerAuth, backoff: { initialMs: 100, maxMs: 500 }, ...extra });
    agents.push(agent);
    return agent;
  }

  /** A new page of `context` at `path`, signing in as `email` first if the context has no session. */
  async function signIn(context: BrowserContext, email: string, path: string): Promise<Page> {
    const page = await context.newPage();
    page.on("pageerror", (e) => errors.push(`page error: ${e}`));
    page.on("response", (r) => {
      if (r.status() >= 400 && r.request().resourceType() !== "document" && r.request().resourceType() !== "fetch" && new URL(r.url()).pathname !== "/favicon.ico")
        errors.push(`${r.status()} ${r.url()}`);
    });
    await page.goto(`${t.baseUrl}${path}`);
    if (new URL(page.url()).pathname === path) return page; // this browser is signed in already
    await page.getByLabel("Email").fill(email);
    await page.getByLabel("Password").fill(password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL((u) => u.pathname === path);
    return page;
  }

  async function check(page: Page, name: string, screenshot = false): Promise<void> {
    await assertAccessible(page, name);
    if (screenshot) await docsScreenshot(page, name);
    await page.setViewportSize({ width: 375, height: 800 });
    await assertAccessible(page, name);
    await page.setViewportSize(desktop);
  }

  async function run(page: Page, command: string): Promise<ReturnType<Page["locator"]>> {
    const before = await page.locator(".console-result").count();
    await page.getByLabel("Command", { exact: true }).fill(command);
    await page.getByRole("button", { name: "Run" }).click();
    const entry = page.locator(".console-result").nth(before);
    await entry.waitFor();
    return entry;
  }

  before(async () => {
    t = await startListeningOutpost();
    const identity = createClient(IdentityService, t.outpost.runtime.core.transport());
    await identity.createUser({ email: "olive@example.com", password, name: "Olive Owner" });
    await identity.createUser({ email: "mo@example.com", password, name: "Mo Member" });
    const key = (await identity.issueApiKey({ email: "olive@example.com", name: "tests" })).key;
    apiWithKey = async (path, body) => {
      const res = await fetch(`${t.baseUrl}/api/http/${path}`, {
        method: "POST",
        headers: { "x-api-key": key, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      const json = (await res.json()) as Json;
      assert.equal(res.status, 200, JSON.stringify(json));
      return json;
    };
    await api("organizations/createOrganization", { name: "Acme", slug: "acme" });
    const invited = await api("organizations/addMember", { organizationSlug: "acme", email: "mo@example.com", role: "member" });
    member = { userId: await acceptOnOutpost(t, "mo@example.com", invited.token) };
    for (const name of ["Survival", "Proxy SMP", "Cracked"]) {
      const created = await api("servers/createServer", { organizationSlug: "acme", name, game: "minecraft" });
      servers[name] = { id: created.server.id, agentKey: created.agentKey };
    }
    await api("organizations/createAccessGrant", { organizationSlug: "acme", userId: member.userId, serverId: servers.Survival.id, actions: allActionNames });

    const survival = connect("Survival", PlayerAuth.ONLINE, { console: consoleHandler });
    await survival.connected();
    survival.setPlayers([steve, alex]);
    // No console handler: the agent tells Outpost it cannot run commands.
    await connect("Proxy SMP", PlayerAuth.PROXY).connected();
    await connect("Cracked", PlayerAuth.OFFLINE, { console: consoleHandler }).connected();
    browser = await launchChromium();
    owner = await browser.newContext({ viewport: desktop });
    owner.setDefaultTimeout(10_000);
  });
  after(async () => {
    await Promise.all(agents.map((a) => a.stop()));
    await browser?.close();
    await t?.close();
  });
  afterEach(function () {
    const seen = errors.splice(0);
    if (this.currentTest?.state === "passed") assert.deepEqual(seen, []);
  });

  return { outpost: () => t, browser: () => browser, owner: () => owner, agents, ran, servers, signIn, check, run };
}
