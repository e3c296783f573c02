/**
 * The files suites' setting: a whole Outpost listening, an owner (Olive) and a member (Mo) of
 * "acme", the server Survival run by the real `outpost-agent wrap` around the stand-in server in a
 * directory of its own (which the tests read and change directly, as the machine's operator would),
 * and headless Chromium. Mo's grant is the test's to make. A test fails on any page error, failed
 * subresource or Content-Security-Policy violation.
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@connectrpc/connect";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { IdentityService } from "../../gen/outpost/identity/v1/identity_service_pb.js";
import { startListeningOutpost, type TestOutpost } from "../support/outpost.ts";
import { startAgentProcess, type AgentProcess } from "../support/agent.ts";
import { assertAccessible, launchChromium } from "../support/browser.ts";
import { acceptOnOutpost } from "../support/fixtures.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- JSON from the HTTP API, read field by field
export type Json = any;

export const desktop = { width: 1280, height: 800 };
export const password = "correct horse battery staple";

/** What the stand-in server's directory holds at the start. */
export const serverFiles: Record<string, string | Buffer> = {
  "server.properties": "motd=A Minecraft Server\nmax-players=20\nonline-mode=true\n",
  "plugins/Essentials/config.yml": "# Essentials\nspawn:\n  enabled: true\n",
  "plugins/Essentials.jar": Buffer.from("PK\u0003\u0004 not really a jar"),
  "world/level.dat": Buffer.from([0x1f, 0x8b, 0, 1, 2, 0xff]),
  "eula.txt": "eula=true\n",
};

/** Starts the setting in the calling suite's `before` and ends it in its `after`; the helpers use it. */
// eslint-disable-next-line max-lines-per-function -- the suites' shared setting and helpers, closing over their Outpost, agent and browser
export function useFilesSetting() {
  let t: TestOutpost;
  let browser: Browser;
  let agent: AgentProcess;
  let apiKey: string;
  const state = { root: "", serverId: "", memberId: "", base: "" };
  const errors: string[] = [];

  /** The HTTP API as Olive (an API key). */
  async function api(method: "GET" | "POST", path: string, body?: unknown): Promise<{ status: number; body: Json }> {
    const res = await fetch(`${t.baseUrl}/api/http/${path}`, {
      method,
      headers: { "x-api-key": apiKey, ...(body ? { "content-type": "application/json" } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  }
  async function ok(method: "GET" | "POST", path: string, body?: unknown): Promise<Json> {
    const res = await api(method, path, body);
    assert.equal(res.status, 200, `${path}: ${JSON.stringify(res.body)}`);
    return res.body;
  }

  /** A browser context (with script unless told), its timeout short, its pages watched for errors. */
  async function newContext(options: { javaScriptEnabled?: boolean } = {}): Promise<BrowserContext> {
    const context = await browser.newContext({ viewport: desktop, acceptDownloads: true, ...options });
    context.setDefaultTimeout(15_000);
    context.on("page", (page) => {
      page.on("pageerror", (e) => errors.push(`page error: ${e}`));
      page.on("console", (m) => {
        if (/Content.Security.Policy|Refused to/i.test(m.text())) errors.push(`console: ${m.text()} (${m.location().url}:${m.location().lineNumber})`);
      });
      page.on("response", (r) => {
        const kind = r.request().resourceType();
        if (r.status() >= 400 && kind !== "document" && kind !== "fetch" && kind !== "xhr" && new URL(r.url()).pathname !== "/favicon.ico")
          errors.push(`${r.status()} ${r.url()}`);
      });
    });
    return context;
  }

  /** A new page of `context` at `path`, signing in as `email` first if the context has no session. */
  async function signIn(context: BrowserContext, email: string, path: string): Promise<Page> {
    const page = await context.newPage();
    await page.goto(`${t.baseUrl}${path}`);
    if (new URL(page.url()).pathname === path.split("?")[0]) return page;
    await page.getByLabel("Email").fill(email);
    await page.getByLabel("Password").fill(password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL((u) => u.pathname === path.split("?")[0]);
    return page;
  }

  /** Accessible at the desktop's width and a phone's. */
  async function check(page: Page, name: string): Promise<void> {
    await assertAccessible(page, name);
    await page.setViewportSize({ width: 375, height: 800 });
    await assertAccessible(page, name);
    await page.setViewportSize(desktop);
  }

  before(async () => {
    t = await startListeningOutpost({ RATE_LIMIT_PER_MINUTE: "100000" });
    const identity = createClient(IdentityService, t.outpost.runtime.core.transport());
    await identity.createUser({ email: "olive@example.com", password, name: "Olive Owner" });
    await identity.createUser({ email: "mo@example.com", password, name: "Mo Member" });
    apiKey = (await identity.issueApiKey({ email: "olive@example.com", name: "tests" })).key;
    await ok("POST", "organizations/createOrganization", { name: "Acme", slug: "acme" });
    const invited = await ok("POST", "organizations/addMember", { organizationSlug: "acme", email: "mo@example.com", role: "member" });
    state.memberId = await acceptOnOutpost(t, "mo@example.com", invited.token);
    const { server, agentKey } = await ok("POST", "servers/createServer", { organizationSlug: "acme", name: "Survival", game: "minecraft" });
    state.serverId = server.id;
    state.base = `/app/o/acme/servers/${server.id}`;
    state.root = mkdtempSync(join(tmpdir(), "outpost-dash-files-"));
    for (const [path, content] of Object.entries(serverFiles)) {
      mkdirSync(join(state.root, path, ".."), { recursive: true });
      writeFileSync(join(state.root, path), content);
    }
    const standIn = new URL("../agent/fixtures/stand-in-server.ts", import.meta.url).pathname;
    agent = startAgentProcess(["wrap", "--url", t.baseUrl, "--key", agentKey, "--auth", "online", "--", process.execPath, standIn, "--format", "paper"], {}, state.root);
    await agent.waitFor(/\[outpost\] connected to Outpost/);
    browser = await launchChromium();
  });
  after(async () => {
    await agent?.stop("SIGKILL");
    await browser?.close();
    await t?.close();
    if (state.root) rmSync(state.root, { recursive: true, force: true });
  });
  afterEach(function () {
    const seen = errors.splice(0);
    if (this.currentTest?.state === "passed") assert.deepEqual(seen, []);
  });

  return { outpost: () => t, state, api, ok, newContext, signIn, check };
}
