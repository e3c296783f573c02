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

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const desktop = { width: 1280, height: 800 };
const password = "correct horse battery staple";
const steve = { name: "Steve", uuid: randomUUID() };
const alex = { name: "Alex", uuid: randomUUID() };

/**
 * A server's console on its dashboard page, in headless Chromium against a whole Outpost with real
 * agents (the agent library over HTTP/2): a command typed in the panel runs on the agent's console
 * handler and its output comes back; lines the agent streams appear live; the players online; each
 * refusal (bad command, offline, no console, no answer, no access) said in words; without script
 * the form still runs the command. And every server says whether it can sign players in.
 */
describe("dashboard: a server's console, its players and whether it signs players in", function () {
  this.timeout(120_000);
  let t: TestOutpost;
  let browser: Browser;
  let owner: BrowserContext;
  let api: (path: string, body: unknown) => Promise<Json>;
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
      if (r.status() >= 400 && r.request().resourceType() !== "document" && r.request().resourceType() !== "fetch" && new URL(r.url()).pathname !== "/favicon.ico") errors.push(`${r.status()} ${r.url()}`);
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
    api = async (path, body) => {
      const res = await fetch(`${t.baseUrl}/api/http/${path}`, { method: "POST", headers: { "x-api-key": key, "content-type": "application/json" }, body: JSON.stringify(body) });
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

  it("says on the list and on each server's page whether the server can sign players in", async () => {
    const page = await signIn(owner, "olive@example.com", "/app/o/acme/servers");
    const trust = (name: string) => page.getByRole("row", { name: new RegExp(`^${name}`) }).locator('[data-field="trust"]');
    assert.equal(await trust("Survival").textContent(), "Verifies players (online mode)");
    assert.equal(await trust("Proxy SMP").textContent(), "Behind an authenticating proxy");
    assert.equal(await trust("Cracked").textContent(), "Offline mode — sign-in refused");
    await check(page, "servers with sign-in trust");

    await page.getByRole("link", { name: "Cracked" }).click();
    const facts = page.locator("dl.facts");
    await facts.getByText("Offline mode — sign-in refused").waitFor();
    assert.match(await facts.innerText(), /cannot prove who a player is/);
    await page.close();
  });

  it("runs a command typed in the panel on the agent and shows its output; lines the agent streams appear live", async () => {
    const page = await signIn(owner, "olive@example.com", `/app/o/acme/servers/${servers.Survival.id}`);
    const live = page.getByRole("log", { name: "Live output" });
    await live.getByText("No output yet.").waitFor();
    await page.getByText("Connected: commands run on the game server's console").waitFor();
    assert.equal(await live.getAttribute("aria-live"), "off", "a busy server does not talk over a screen reader");
    assert.equal(await page.getByRole("log", { name: "Command output" }).getAttribute("aria-live"), null, "a command's output is announced");

    const players = page.getByRole("region", { name: "Players online on Survival" });
    await players.getByRole("row", { name: new RegExp(`Steve ${steve.uuid}`) }).waitFor();
    await players.getByRole("row", { name: new RegExp(`Alex ${alex.uuid}`) }).waitFor();

    const entry = await run(page, "list");
    await entry.getByText("There are 2 of a max of 20 players online: Steve, Alex").waitFor();
    await entry.getByText("Ran", { exact: true }).waitFor();
    assert.equal(ran.at(-1), "list", "the agent's console handler ran it");
    assert.equal(await page.getByLabel("Command", { exact: true }).inputValue(), "", "the command line is cleared");
    assert.equal(await page.evaluate("document.activeElement.id"), "console-command", "the keyboard stays on the command line");

    const markup = await run(page, "/say <i>hi</i>");
    await markup.getByText("[Server] say <i>hi</i>").waitFor();
    assert.equal(await markup.locator("pre").textContent(), "[Server] say <i>hi</i>\n<b>not markup</b>", "output is text, never markup");
    assert.equal(ran.at(-1), "say <i>hi</i>", "the leading slash is dropped");

    agents[0].consoleOutput(["[12:00:01 INFO]: Steve joined the game", "<script>alert(1)</script>"]);
    await live.getByText("[12:00:01 INFO]: Steve joined the game").waitFor();
    await live.getByText("<script>alert(1)</script>").waitFor();
    assert.equal(await live.getByText("No output yet.").count(), 0);
    await page.evaluate(`document.getElementById("console-heading").scrollIntoView()`);
    await check(page, "server-console", true);

    // The players list follows the count the page polls.
    const notch = { name: "Notch", uuid: randomUUID() };
    agents[0].setPlayers([steve, alex, notch]);
    await players.getByRole("row", { name: new RegExp(`Notch ${notch.uuid}`) }).waitFor({ timeout: 15_000 });
    agents[0].setPlayers([steve, alex]);
    await players.getByRole("row", { name: /Notch/ }).waitFor({ state: "detached", timeout: 15_000 });
    await page.close();
  });

  it("says why a command did not run: a bad command, one the agent refused, no answer, no console, offline", async () => {
    const page = await signIn(owner, "olive@example.com", `/app/o/acme/servers/${servers.Survival.id}`);
    await page.getByText("Connected: commands run on the game server's console").waitFor();
    // Longer than the field allows (set by script, as a crafted post would be): the API's 400.
    await page.evaluate(`document.getElementById("console-command").value = "x".repeat(1001)`);
    await page.getByRole("button", { name: "Run" }).click();
    await page.locator(".console-result").last().getByText(/This is not a command Outpost can send/).waitFor();

    const busy = await run(page, "busy now");
    await busy.getByText("Not run").waitFor();
    await busy.getByText("the console is busy").waitFor();

    const hang = await run(page, "hang");
    await hang.getByText(/did not answer in time/).waitFor({ timeout: 30_000 });
    await hang.getByText("No answer", { exact: true }).waitFor();
    // The connection fails before the answer comes: the command may have run, so not "Refused" either.
    await page.route("**/console", (route) => route.abort("connectionreset"));
    const cut = await run(page, "say cut off");
    await cut.getByText(/The connection failed before the answer came/).waitFor();
    await cut.getByText("No answer", { exact: true }).waitFor();
    await page.unroute("**/console");
    await check(page, "console refusals");
    await page.close();

    const proxied = await signIn(owner, "olive@example.com", `/app/o/acme/servers/${servers["Proxy SMP"].id}`);
    await proxied.getByText(/cannot reach the game's console/).first().waitFor();
    const noConsole = await run(proxied, "list");
    await noConsole.getByText(/The server cannot run commands now/).waitFor();
    await proxied.close();

    const cracked = await signIn(owner, "olive@example.com", `/app/o/acme/servers/${servers.Cracked.id}`);
    await cracked.getByText("Connected: commands run on the game server's console").waitFor();
    await agents[2].stop();
    await cracked.getByText("The server is offline: commands are refused until its agent connects.").waitFor({ timeout: 15_000 });
    const offline = await run(cracked, "list");
    await offline.getByText(/The server cannot run commands now/).waitFor();
    assert.equal(ran.filter((c) => c === "list").length, 1, "neither refused command reached an agent");
    await cracked.close();
  });

  it("works without script: the form runs the command and the page comes back with its output, or with why not", async () => {
    const context = await browser.newContext({ viewport: desktop, javaScriptEnabled: false });
    context.setDefaultTimeout(10_000);
    try {
      const page = await signIn(context, "olive@example.com", `/app/o/acme/servers/${servers.Survival.id}`);
      await page.getByText("The live output needs the page's script").waitFor();
      await page.getByLabel("Command", { exact: true }).fill("say from a plain form");
      await page.getByRole("button", { name: "Run" }).click();
      await page.getByRole("log", { name: "Command output" }).getByText("[Server] say from a plain form").waitFor();
      assert.equal(ran.at(-1), "say from a plain form");
    } finally {
      await context.close();
    }

    // The same pages as a script-less browser gets them (the form posted without console.js), under axe.
    const page = await signIn(owner, "olive@example.com", `/app/o/acme/servers/${servers.Survival.id}`);
    const post = async (command: string) => {
      await page.evaluate(`document.getElementById("console-command").value = ${JSON.stringify(command)}`);
      const [response] = await Promise.all([page.waitForNavigation(), page.evaluate(`HTMLFormElement.prototype.submit.call(document.querySelector("form[data-console-form]"))`)]);
      return response!.status();
    };
    assert.equal(await post("list"), 200);
    await page.getByRole("log", { name: "Command output" }).getByText("There are 2 of a max of 20 players online: Steve, Alex").waitFor();
    await check(page, "console output without script");
    assert.equal(await post("hang"), 504);
    const unanswered = page.getByRole("log", { name: "Command output" }).locator(".console-result");
    await unanswered.getByText(/did not answer in time/).waitFor();
    assert.equal(await unanswered.locator(".status").textContent(), "No answer");
    assert.equal(await post("x".repeat(1001)), 400);
    const field = page.getByLabel("Command", { exact: true });
    assert.equal(await field.getAttribute("aria-invalid"), "true");
    assert.equal(await field.inputValue(), "x".repeat(1001), "the command is kept to correct");
    await page.locator("#console-command-error").getByText(/This is not a command Outpost can send/).waitFor();
    await check(page, "console refusal without script");
    await page.close();
  });

  it("lets a member granted the server use its console; once an owner revokes the grant, the live output stops within seconds and says why", async () => {
    const context = await browser.newContext({ viewport: desktop });
    context.setDefaultTimeout(10_000);
    const path = `/app/o/acme/servers/${servers.Survival.id}`;
    try {
      const page = await signIn(context, "mo@example.com", path);
      const entry = await run(page, "say hello from Mo");
      await entry.getByText("[Server] say hello from Mo").waitFor();
      const live = page.getByRole("log", { name: "Live output" });
      agents[0].consoleOutput(["[INFO] Mo sees this"]);
      await live.getByText("[INFO] Mo sees this").waitFor();

      // The owner revokes it on the server's page, and the dialog says what follows.
      const ownerPage = await signIn(owner, "olive@example.com", path);
      await ownerPage.getByRole("button", { name: "Revoke access of mo@example.com" }).click();
      const dialog = ownerPage.getByRole("dialog");
      await dialog.getByText("They stop seeing this server and using its console at once; a live console they have open stops within a few seconds.").waitFor();
      await Promise.all([ownerPage.waitForNavigation(), dialog.getByRole("button", { name: "Revoke" }).click()]);
      await live.getByText(/You no longer have access to this server's console, so the live output stopped/).waitFor({ timeout: 15_000 });
      assert.match((await page.locator("#console-state").textContent()) ?? "", /You no longer have access to this server's console/);

      // What the server prints next reaches the owner's live output, and not Mo's.
      const ownerLive = ownerPage.getByRole("log", { name: "Live output" });
      await ownerPage.getByText("Connected: commands run on the game server's console").waitFor();
      agents[0].consoleOutput(["[INFO] after the revoke"]);
      await ownerLive.getByText("[INFO] after the revoke").waitFor();
      assert.equal(await live.getByText("[INFO] after the revoke").count(), 0);
      await ownerPage.close();

      const refused = await run(page, "say still here?");
      await refused.getByText(/does not exist any more, or you no longer have access|may not use this server's console/).waitFor();
      assert.notEqual(ran.at(-1), "say still here?");
    } finally {
      await context.close();
    }
  });

  it("holds the live output's connection only while the tab is visible, and catches up when it shows again", async () => {
    const page = await signIn(owner, "olive@example.com", `/app/o/acme/servers/${servers.Survival.id}`);
    const live = page.getByRole("log", { name: "Live output" });
    await page.getByText("Connected: commands run on the game server's console").waitFor();
    const isStream = (r: { url(): string }) => new URL(r.url()).pathname.endsWith("/console/events");
    const show = (state: string) =>
      page.evaluate(`Object.defineProperty(document, "visibilityState", { value: "${state}", configurable: true }); document.dispatchEvent(new Event("visibilitychange"))`);

    const closed = page.waitForEvent("requestfailed", { predicate: isStream });
    await show("hidden");
    await closed;
    agents[0].consoleOutput(["[INFO] printed while the tab was hidden"]);
    const reopened = page.waitForEvent("request", { predicate: isStream });
    await show("visible");
    await reopened;
    await live.getByText("[INFO] printed while the tab was hidden").waitFor();
    agents[0].consoleOutput(["[INFO] shown again"]);
    await live.getByText("[INFO] shown again").waitFor();
    await page.close();
  });

  it("answers the live console and the players only to a signed-in person who sees the server, and the live output says why not", async () => {
    const base = `/app/o/acme/servers/${servers.Survival.id}`;
    for (const path of ["console/events", "players"]) {
      const anonymous = await fetch(`${t.baseUrl}${base}/${path}`);
      assert.equal(anonymous.status, 401, path);
      assert.equal(((await anonymous.json()) as Json).code, "unauthenticated");
    }
    // An EventSource cannot read an error's body: it gets the refusal as an event.
    const refusedEvent = /^event: refused\ndata: (\{.*\})\n\n$/;
    const anonymousStream = await fetch(`${t.baseUrl}${base}/console/events`, { headers: { accept: "text/event-stream" } });
    assert.equal(anonymousStream.status, 200);
    const [, anonymousRefusal] = refusedEvent.exec(await anonymousStream.text()) ?? [];
    assert.deepEqual(JSON.parse(anonymousRefusal), { status: 401, code: "unauthenticated", message: "You are signed out, so the live output stopped. Reload the page to sign in again." });

    // Mo's grant is gone: the stream is refused before it starts.
    const context = await browser.newContext();
    try {
      const page = await signIn(context, "mo@example.com", "/app/o/acme/servers");
      const statuses = await page.evaluate<number[]>(`Promise.all(["${base}/console/events", "${base}/players"].map((u) => fetch(u).then((r) => r.status)))`);
      assert.deepEqual(statuses.map((s) => s === 403 || s === 404), [true, true], String(statuses));
      const stream = await page.evaluate<{ status: number; body: string }>(`fetch("${base}/console/events", { headers: { accept: "text/event-stream" } }).then(async (r) => ({ status: r.status, body: await r.text() }))`);
      assert.equal(stream.status, 200);
      const refusal = JSON.parse(refusedEvent.exec(stream.body)?.[1] ?? "null");
      assert.ok(refusal?.status === 403 || refusal?.status === 404, stream.body);
      assert.match(refusal.message, /no longer have access/);
    } finally {
      await context.close();
    }

    // Signed out in another tab: the live output stops within seconds and says so, and the open
    // panel says so instead of running a command.
    const olive = await browser.newContext({ viewport: desktop });
    olive.setDefaultTimeout(10_000);
    try {
      const page = await signIn(olive, "olive@example.com", base);
      const live = page.getByRole("log", { name: "Live output" });
      await page.getByText("Connected: commands run on the game server's console").waitFor();
      const other = await olive.newPage();
      await other.goto(`${t.baseUrl}/app/o/acme/servers`);
      await other.getByRole("button", { name: "Sign out" }).click();
      await other.waitForURL(/\/sign-in/);
      await live.getByText("You are signed out, so the live output stopped. Reload the page to sign in again.").waitFor({ timeout: 15_000 });

      // What the server prints next reaches a page still signed in, and not this one.
      const watcher = await signIn(owner, "olive@example.com", base);
      await watcher.getByText("Connected: commands run on the game server's console").waitFor();
      agents[0].consoleOutput(["[INFO] after the sign-out"]);
      await watcher.getByRole("log", { name: "Live output" }).getByText("[INFO] after the sign-out").waitFor();
      assert.equal(await live.getByText("[INFO] after the sign-out").count(), 0);
      await watcher.close();

      const before = ran.length;
      const entry = await run(page, "say after sign-out");
      await entry.getByText("You are signed out. Reload the page to sign in again.").waitFor();
      assert.equal(ran.length, before, "nothing ran");
    } finally {
      await olive.close();
    }

    // Too many live consoles open: the page says so, rather than that the output is unavailable.
    const cookie = (await owner.cookies()).map((c) => `${c.name}=${c.value}`).join("; ");
    const held: AbortController[] = [];
    try {
      for (let status = 200; status === 200 && held.length <= 10; ) {
        held.push(new AbortController());
        status = (await fetch(`${t.baseUrl}${base}/console/events`, { headers: { cookie }, signal: held.at(-1)!.signal })).status;
        if (status !== 200) assert.equal(status, 429);
      }
      const page = await signIn(owner, "olive@example.com", base);
      await page.getByRole("log", { name: "Live output" }).getByText("The live output is off: you have 10 live consoles open; close one and try again (by reloading this page).").waitFor();
      await page.close();
    } finally {
      for (const abort of held) abort.abort();
    }
  });
});
