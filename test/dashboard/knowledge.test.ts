import assert from "node:assert/strict";
import { createClient } from "@connectrpc/connect";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { IdentityService } from "../../gen/outpost/identity/v1/identity_service_pb.js";
import { startListeningOutpost, type TestOutpost } from "../support/outpost.ts";
import { assertAccessible, launchChromium } from "../support/browser.ts";

const desktop = { width: 1280, height: 800 };
const password = "correct horse battery staple";

const hostile = `Before **restarting**, read this.

<script>window.pwned = true</script>
<img src=x onerror="window.pwned = true">

- stop the server
- [the docs](https://example.com/docs) and [not a link](javascript:window.pwned=true)

\`\`\`
<b>raw</b>
\`\`\``;

/** The knowledge pages in Chromium, under axe: write with a preview, read rendered Markdown safely, search, a version conflict, delete. */
describe("dashboard: knowledge", function () {
  this.timeout(120_000);
  let t: TestOutpost;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;

  async function check(p: Page = page): Promise<void> {
    await assertAccessible(p, p.url());
    await p.setViewportSize({ width: 375, height: 800 });
    await assertAccessible(p, p.url());
    await p.setViewportSize(desktop);
  }

  async function write(title: string, content: string, tags = ""): Promise<void> {
    await page.goto(`${t.baseUrl}/app/o/acme/knowledge/new`);
    await page.getByLabel("Title").fill(title);
    await page.getByLabel("Content (Markdown)").fill(content);
    await page.getByLabel("Tags").fill(tags);
    await page.getByRole("button", { name: "Create note" }).click();
    await page.getByText("Note created.").waitFor();
  }

  before(async () => {
    t = await startListeningOutpost();
    await createClient(IdentityService, t.outpost.runtime.core.transport()).createUser({ email: "owner@example.com", password, name: "Owner" });
    browser = await launchChromium();
    context = await browser.newContext({ viewport: desktop });
    context.setDefaultTimeout(10_000);
    page = await context.newPage();
    await page.goto(`${t.baseUrl}/app`);
    await page.getByLabel("Email").fill("owner@example.com");
    await page.getByLabel("Password").fill(password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL((u) => u.pathname === "/app/organizations");
    await page.getByLabel("Name", { exact: true }).fill("Acme");
    await page.getByLabel("URL name (slug)").fill("acme");
    await page.getByRole("button", { name: "Create organization" }).click();
    await page.waitForURL((u) => u.pathname === "/app/o/acme");
  });
  after(async () => {
    await context?.close();
    await browser?.close();
    await t?.close();
  });

  it("previews and creates a note whose Markdown is rendered and whose HTML is shown as text", async () => {
    await page.getByRole("navigation", { name: "Acme" }).getByRole("link", { name: "Knowledge" }).click();
    await page.getByRole("heading", { name: "Knowledge", level: 1 }).waitFor();
    await page.getByText("No notes yet.").waitFor();
    await check();
    await page.getByRole("link", { name: "Write a note" }).click();
    await page.getByLabel("Title").fill("Restart <script>alert(1)</script>");
    await page.getByLabel("Content (Markdown)").fill(hostile);
    await page.getByLabel("Tags").fill("Ops, restarts, ops");
    await page.getByRole("button", { name: "Preview" }).click();
    await page.getByRole("heading", { name: /^Preview: Restart/ }).waitFor();
    assert.equal(await page.getByLabel("Content (Markdown)").inputValue(), hostile, "the text is kept as typed");
    await check();
    await page.getByLabel("Tags").fill("Ops, has space");
    await page.getByRole("button", { name: "Create note" }).click();
    await page.getByText(/Tag 2: "has space" is not a tag/).waitFor();
    await check();
    await page.getByLabel("Tags").fill("Ops, restarts, ops");
    await page.getByRole("button", { name: "Create note" }).click();
    await page.getByText("Note created.").waitFor();
    await page.getByRole("heading", { name: "Restart <script>alert(1)</script>", level: 1 }).waitFor();

    const body = page.locator("article.markdown");
    assert.equal(await body.locator("strong").first().textContent(), "restarting");
    assert.equal(await body.locator("li").count(), 2);
    assert.equal(await body.getByRole("link", { name: "the docs" }).getAttribute("href"), "https://example.com/docs");
    assert.equal(await body.getByRole("link", { name: "not a link" }).count(), 0, "a javascript: link is only its text");
    await body.getByText("<script>window.pwned = true</script>").waitFor();
    assert.equal(await body.locator("pre code").textContent(), "<b>raw</b>");
    assert.equal(await page.locator("main script, main img, main b").count(), 0, "no markup from the note");
    assert.equal(await page.evaluate(() => (globalThis as unknown as { pwned?: boolean }).pwned), undefined);
    assert.deepEqual(await page.getByRole("list", { name: "Tags" }).getByRole("link").allTextContents(), ["ops", "restarts"]);
    await check();
  });

  it("searches with marked snippets, best match first, and filters by tag", async () => {
    await write("Chores", "Every week, rotate the whitelist backup.", "weekly");
    await write("Whitelist backup", "Copy the file somewhere safe.", "ops");
    await page.goto(`${t.baseUrl}/app/o/acme/knowledge`);
    await page.getByRole("searchbox", { name: "Search" }).fill("whitelist backups");
    await page.getByRole("button", { name: "Search" }).click();
    await page.waitForURL((u) => u.searchParams.get("q") === "whitelist backups");
    const results = page.getByRole("list", { name: "Best matches first" });
    assert.deepEqual(await results.getByRole("heading", { level: 2 }).allTextContents(), ["Whitelist backup", "Chores"]);
    assert.deepEqual(await results.locator("mark").allTextContents(), ["whitelist", "backup"]);
    await check();
    await page.getByRole("link", { name: "Clear" }).click();
    await page.getByRole("link", { name: "weekly" }).click();
    await page.waitForURL((u) => u.searchParams.get("tag") === "weekly");
    assert.deepEqual(await page.getByRole("list", { name: "Newest first" }).getByRole("heading", { level: 2 }).allTextContents(), ["Chores"]);
  });

  it("shows a version conflict clearly, keeps the typed text, and saves on a second try", async () => {
    await page.goto(`${t.baseUrl}/app/o/acme/knowledge`);
    await page.getByRole("link", { name: "Chores" }).click();
    const notePage = page.url();
    await page.getByRole("link", { name: "Edit" }).click();
    await page.getByLabel("Content (Markdown)").fill("Mine: rotate it daily.");

    const other = await context.newPage();
    await other.goto(`${notePage}/edit`);
    await other.getByLabel("Content (Markdown)").fill("Theirs: rotate it hourly.");
    await other.getByRole("button", { name: "Save note" }).click();
    await other.getByText("Note saved.").waitFor();
    await other.close();

    await page.getByRole("button", { name: "Save note" }).click();
    await page.getByRole("alert").getByText("Someone else changed this note while you were editing it.").waitFor();
    assert.equal(await page.getByLabel("Content (Markdown)").inputValue(), "Mine: rotate it daily.");
    await page.getByText("Theirs: rotate it hourly.").waitFor();
    await check();
    await page.getByRole("button", { name: "Save note" }).click();
    await page.getByText("Note saved.").waitFor();
    await page.getByText("Mine: rotate it daily.").waitFor();
    await page.getByText("version 3").waitFor();
  });

  it("deletes a note after confirmation", async () => {
    await page.getByRole("button", { name: "Delete Chores" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Delete" }).click();
    await page.getByText("Note deleted.").waitFor();
    assert.equal(await page.getByRole("link", { name: "Chores" }).count(), 0);
  });
});
