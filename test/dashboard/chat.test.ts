import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@connectrpc/connect";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { IdentityService } from "../../gen/outpost/identity/v1/identity_service_pb.js";
import { Game } from "../../gen/outpost/servers/v1/resources_pb.js";
import { PlayerAuth, startAgent, type Agent } from "../../agent/client.ts";
import { startListeningOutpost, type TestOutpost } from "../support/outpost.ts";
import { assertAccessible, launchChromium } from "../support/browser.ts";
import { startModelStub, type Json, type ModelStub } from "../support/model-stub.ts";

const desktop = { width: 1280, height: 800 };
const password = "correct horse battery staple";

/**
 * The assistant's chat page in Chromium, under axe, against a whole Outpost, a real agent and a
 * stand-in model: the answer streams in, a command waits for Allow and runs on the agent, a file
 * change waits as its diff and is written on Allow; without script the form still answers; with
 * no model the page says so.
 */
describe("dashboard: the assistant's chat", function () {
  this.timeout(120_000);
  let t: TestOutpost;
  let stub: ModelStub;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let agent: Agent;
  let serverId: string;
  const ran: string[] = [];
  const root = mkdtempSync(join(tmpdir(), "outpost-chat-page-"));

  async function check(on: Page = page): Promise<void> {
    await assertAccessible(on, on.url());
    await on.setViewportSize({ width: 375, height: 800 });
    await assertAccessible(on, on.url());
    await on.setViewportSize(desktop);
  }

  async function signIn(into: BrowserContext): Promise<Page> {
    const p = await into.newPage();
    await p.goto(`${t.baseUrl}/app/o/acme/assistant`);
    await p.getByLabel("Email").fill("owner@example.com");
    await p.getByLabel("Password").fill(password);
    await p.getByRole("button", { name: "Sign in" }).click();
    await p.waitForURL((u) => u.pathname === "/app/o/acme/assistant");
    return p;
  }

  before(async () => {
    stub = await startModelStub();
    t = await startListeningOutpost({ OCELOT_MODEL_URL: stub.url, OCELOT_MODEL: "stub-model" });
    const identity = createClient(IdentityService, t.outpost.runtime.core.transport());
    await identity.createUser({ email: "owner@example.com", password, name: "Owner" });
    const key = (await identity.issueApiKey({ email: "owner@example.com", name: "tests" })).key;
    const api = async (path: string, body: unknown) => {
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
    const created = await api("servers/createServer", { organizationSlug: "acme", name: "Survival", game: "minecraft" });
    serverId = created.server.id;
    const { config } = await api("ocelot/updateOcelotConfig", {
      organizationSlug: "acme",
      version: 0,
      settings: { enabled: true, tools: { consoleRead: true, consoleCommand: true, players: true, knowledgeRead: true, files: true }, responseStyle: "concise" },
    });
    assert.equal(config.settings.tools.consoleCommand, true);
    agent = startAgent({
      url: t.baseUrl,
      key: created.agentKey,
      game: Game.MINECRAFT,
      playerAuth: PlayerAuth.ONLINE,
      backoff: { initialMs: 100, maxMs: 500 },
      files: { root },
      console: async (command) => {
        ran.push(command);
        return { success: true, output: [`[Server] ${command}`] };
      },
    });
    await agent.connected();
    browser = await launchChromium();
    context = await browser.newContext({ viewport: desktop });
    context.setDefaultTimeout(15_000);
    page = await signIn(context);
  });
  after(async () => {
    await context?.close();
    await browser?.close();
    await agent?.stop();
    await t?.close();
    await stub?.close();
    rmSync(root, { recursive: true, force: true });
  });

  it("streams an answer, asks before a command and runs it on Allow", async () => {
    await page.getByRole("heading", { name: "New conversation", level: 2 }).waitFor();
    await check();
    stub.script({
      text: ["Let me ", "greet ", "them."],
      toolCalls: [{ id: "call_1", name: "console_command", arguments: { server_id: serverId, command: "say <b>hi</b>" } }],
    });
    await page.getByLabel("Your question").fill("Greet the players");
    await page.getByRole("button", { name: "Send" }).click();
    await page.locator(".chat-msg.assistant .chat-text").filter({ hasText: "Let me greet them." }).waitFor();
    const command = page.locator(".chat-confirm .chat-command");
    await command.waitFor();
    assert.equal(await command.textContent(), "say <b>hi</b>", "the command is shown verbatim, as text");
    await page.waitForURL((u) => u.pathname.startsWith("/app/o/acme/assistant/c/"));
    await check();
    assert.deepEqual(ran, []);

    stub.script({ text: ["Done."] });
    await page.getByRole("button", { name: "Allow" }).click();
    await page.locator(".chat-msg.assistant .chat-text").filter({ hasText: "Done." }).waitFor();
    assert.deepEqual(ran, ["say <b>hi</b>"]);
    await page.locator(".chat-msg.tool summary").filter({ hasText: "Result of console_command: done" }).waitFor();
    await check();

    // The saved conversation reads back whole.
    await page.reload();
    await page.locator(".chat-msg.assistant .chat-text").filter({ hasText: "Done." }).waitFor();
    assert.equal(await page.locator(".chat-list li").count(), 1);
  });

  it("isolates the proposed command and the server's name (<bdi>), streamed and reloaded, and never asks about one with a bidirectional control", async () => {
    await page.goto(`${t.baseUrl}/app/o/acme/assistant`);
    const proposed = "say שלום <b>x</b> 1";
    stub.script({ text: ["Asking."], toolCalls: [{ id: "call_rtl", name: "console_command", arguments: { server_id: serverId, command: proposed } }] });
    await page.getByLabel("Your question").fill("Greet them in Hebrew");
    await page.getByRole("button", { name: "Send" }).click();
    const shown = async () => {
      await page.locator(".chat-confirm .chat-command").waitFor();
      assert.equal(await page.locator(".chat-confirm .chat-command > bdi").textContent(), proposed, "the command, verbatim and as text, in a bdi");
      assert.equal(await page.locator(".chat-confirm h3 > bdi").textContent(), "Survival");
    };
    await shown();
    await page.waitForURL((u) => u.pathname.startsWith("/app/o/acme/assistant/c/"));
    await page.reload();
    await shown();
    stub.script({ text: ["Not then."] });
    await page.getByRole("button", { name: "Deny" }).click();
    await page.locator(".chat-msg.assistant .chat-text").filter({ hasText: "Not then." }).waitFor();

    stub.script(
      { text: ["Trying."], toolCalls: [{ id: "call_rlo", name: "console_command", arguments: { server_id: serverId, command: "say \u202eevil" } }] },
      { text: ["It was refused."] },
    );
    await page.getByLabel("Your question").fill("Say it backwards");
    await page.getByRole("button", { name: "Send" }).click();
    await page.locator(".chat-msg.assistant .chat-text").filter({ hasText: "It was refused." }).waitFor();
    assert.equal(await page.locator(".chat-confirm").count(), 0, "nothing to allow");
    assert.ok(!ran.some((command) => command.includes("\u202e")));
  });

  it("shows a file change as its diff, a control in it made visible, streamed and reloaded, and writes it on Allow", async () => {
    writeFileSync(join(root, "server.properties"), "motd=A Minecraft Server\nmax-players=20\n");
    await page.goto(`${t.baseUrl}/app/o/acme/assistant`);
    const edited = "motd=\u202eevil\nmax-players=40\n";
    stub.script({
      text: ["Changing it."],
      toolCalls: [{ id: "call_edit", name: "propose_file_edit", arguments: { server_id: serverId, path: "server.properties", content: edited } }],
    });
    await page.getByLabel("Your question").fill("Forty players");
    await page.getByRole("button", { name: "Send" }).click();
    const shown = async () => {
      const diff = page.locator(".chat-confirm .chat-diff");
      await diff.waitFor();
      assert.equal(
        await diff.textContent(),
        "--- a/server.properties\n+++ b/server.properties\n@@ -1,2 +1,2 @@\n-motd=A Minecraft Server\n-max-players=20\n+motd=\\u202eevil\n+max-players=40\n",
        "every line as it changes, the right-to-left override as its escape",
      );
      assert.deepEqual([await page.locator(".chat-diff .diff-add").count(), await page.locator(".chat-diff .diff-del").count()], [2, 2]);
      assert.equal(await page.locator(".chat-confirm h3 > bdi").first().textContent(), "server.properties");
    };
    await shown();
    await page.waitForURL((u) => u.pathname.startsWith("/app/o/acme/assistant/c/"));
    await check();
    await page.reload();
    await shown();
    assert.equal(readFileSync(join(root, "server.properties"), "utf8"), "motd=A Minecraft Server\nmax-players=20\n", "nothing written before Allow");

    stub.script({ text: ["Changed."] });
    await page.getByRole("button", { name: "Allow" }).click();
    await page.locator(".chat-msg.assistant .chat-text").filter({ hasText: "Changed." }).waitFor();
    assert.equal(readFileSync(join(root, "server.properties"), "utf8"), edited);
  });

  it("says so when no model is configured, and still shows the conversations", async () => {
    const plain = await startListeningOutpost({});
    try {
      const identity = createClient(IdentityService, plain.outpost.runtime.core.transport());
      await identity.createUser({ email: "owner@example.com", password, name: "Owner" });
      const key = (await identity.issueApiKey({ email: "owner@example.com", name: "tests" })).key;
      await fetch(`${plain.baseUrl}/api/http/organizations/createOrganization`, {
        method: "POST",
        headers: { "x-api-key": key, "content-type": "application/json" },
        body: JSON.stringify({ name: "Acme", slug: "acme" }),
      });
      const other = await browser.newContext({ viewport: desktop });
      try {
        const p = await other.newPage();
        await p.goto(`${plain.baseUrl}/app/o/acme/assistant`);
        await p.getByLabel("Email").fill("owner@example.com");
        await p.getByLabel("Password").fill(password);
        await p.getByRole("button", { name: "Sign in" }).click();
        await p.getByRole("alert").filter({ hasText: "No model is configured." }).waitFor();
        await check(p);
      } finally {
        await other.close();
      }
    } finally {
      await plain.close();
    }
  });

  it("answers without script: the form posts and the page comes back with the whole answer", async () => {
    const plain = await browser.newContext({ viewport: desktop, javaScriptEnabled: false });
    plain.setDefaultTimeout(15_000);
    try {
      const p = await signIn(plain);
      stub.script({ text: ["Plain ", "answer."] });
      await p.getByLabel("Your question").fill("Anything?");
      await p.getByRole("button", { name: "Send" }).click();
      await p.locator(".chat-msg.assistant .chat-text").filter({ hasText: "Plain answer." }).waitFor();
      assert.match(new URL(p.url()).pathname, /^\/app\/o\/acme\/assistant\/c\//);
    } finally {
      await plain.close();
    }
  });
});
