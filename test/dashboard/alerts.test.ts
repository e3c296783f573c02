import assert from "node:assert/strict";
import { createClient } from "@connectrpc/connect";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { IdentityService } from "../../gen/outpost/identity/v1/identity_service_pb.js";
import { startListeningOutpost, type TestOutpost } from "../support/outpost.ts";
import { assertAccessible, launchChromium } from "../support/browser.ts";

const desktop = { width: 1280, height: 800 };
const password = "correct horse battery staple";

/** The alerts pages in Chromium, under axe: add a rule (a refused one shows why), see its deliveries, edit, pause and resume it, delete it. */
describe("dashboard: alerts", function () {
  this.timeout(120_000);
  let t: TestOutpost;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;

  async function check(): Promise<void> {
    await assertAccessible(page, page.url());
    await page.setViewportSize({ width: 375, height: 800 });
    await assertAccessible(page, page.url());
    await page.setViewportSize(desktop);
  }

  before(async () => {
    t = await startListeningOutpost({ ALLOW_LOCAL_OUTBOUND: "true" });
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

  it("adds a rule (a bad time zone comes back with its message), lists it and its deliveries, edits, pauses, resumes and deletes it", async () => {
    await page.getByRole("navigation", { name: "Acme" }).getByRole("link", { name: "Alerts" }).click();
    await page.getByRole("heading", { name: "Alerts", level: 1 }).waitFor();
    await page.getByText("No alert rules yet.").waitFor();
    await check();
    await page.getByLabel("Name", { exact: true }).fill("Config changes");
    await page.getByRole("checkbox", { name: "configuration" }).check();
    await page.getByRole("checkbox", { name: "The dashboard (owners and admins)" }).check();
    await page.getByLabel("Quiet hours from (HH:MM)").fill("22:00");
    await page.getByLabel("Quiet hours until (HH:MM)").fill("07:00");
    await page.getByLabel("Time zone").fill("Mars/Olympus");
    await page.getByRole("button", { name: "Add alert rule" }).click();
    await page.getByText(/not an IANA time zone/).waitFor();
    assert.equal(await page.getByLabel("Name", { exact: true }).inputValue(), "Config changes", "what was typed is kept");
    await check();
    await page.getByLabel("Quiet hours from (HH:MM)").fill("");
    await page.getByLabel("Quiet hours until (HH:MM)").fill("");
    await page.getByLabel("Time zone").fill("");
    await page.getByRole("button", { name: "Add alert rule" }).click();
    await page.getByText("Alert rule added.").waitFor();
    await page
      .getByRole("row", { name: /Config changes/ })
      .getByText("configuration · every severity · any server")
      .waitFor();
    await check();
    // The rule's own creation is a configuration event of the organization: its first delivery.
    await page.getByRole("link", { name: "See the deliveries" }).click();
    await page.getByRole("heading", { name: "Alert deliveries", level: 1 }).waitFor();
    await page.getByRole("row", { name: /alert_rule.created/ }).waitFor();
    await check();
    await page.getByRole("link", { name: "Alerts" }).first().click();

    // Edit: the form comes filled in; a refused change keeps what was typed; a good one is saved.
    await page.getByRole("link", { name: "Edit Config changes" }).click();
    await page.getByRole("heading", { name: "Edit Config changes", level: 1 }).waitFor();
    assert.equal(await page.getByLabel("Name", { exact: true }).inputValue(), "Config changes");
    assert.equal(await page.getByRole("checkbox", { name: "configuration" }).isChecked(), true);
    await check();
    await page.getByLabel("At most this many per hour to each target").fill("99999");
    await page.getByRole("button", { name: "Save alert rule" }).click();
    await page.getByRole("alert").waitFor();
    await check();
    await page.getByLabel("At most this many per hour to each target").fill("5");
    await page.getByLabel("Name", { exact: true }).fill("Config watch");
    await page.getByRole("checkbox", { name: "security" }).check();
    await page.getByRole("button", { name: "Save alert rule" }).click();
    await page.getByText("Alert rule saved.").waitFor();
    await page
      .getByRole("row", { name: /Config watch/ })
      .getByText("security, configuration · every severity · any server")
      .waitFor();
    await page.getByRole("link", { name: "Edit Config watch" }).click();
    assert.equal(await page.getByLabel("At most this many per hour to each target").inputValue(), "5", "the saved cap comes back");
    await page.getByRole("link", { name: "Cancel" }).click();

    // Pause and resume.
    await page.getByRole("button", { name: "Pause Config watch" }).click();
    await page.getByText("Alert rule paused").waitFor();
    await page
      .getByRole("row", { name: /Config watch/ })
      .getByText("Disabled")
      .waitFor();
    await check();
    await page.getByRole("button", { name: "Resume Config watch" }).click();
    await page.getByText("Alert rule resumed.").waitFor();
    await page
      .getByRole("row", { name: /Config watch/ })
      .getByText("Enabled")
      .waitFor();

    await page.getByRole("button", { name: "Delete Config watch" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Delete" }).click();
    await page.getByText("Alert rule deleted.").waitFor();
    await page.getByText("No alert rules yet.").waitFor();
  });

  it("adds a threshold rule: a value out of range comes back with its message, and the list says what it watches", async () => {
    await page.getByRole("navigation", { name: "Acme" }).getByRole("link", { name: "Alerts" }).click();
    await page.getByLabel("Name", { exact: true }).fill("Lag");
    await page.getByLabel("Watch").selectOption("tps_below");
    await page.getByLabel("Value (TPS, or percent of the memory limit)").fill("25");
    await page.getByLabel("For how many minutes").fill("5");
    await page.getByRole("checkbox", { name: "The dashboard (owners and admins)" }).check();
    await page.getByRole("button", { name: "Add alert rule" }).click();
    await page.getByText("must be from 0.1 to 20 for tps_below").waitFor();
    assert.equal(await page.getByLabel("Watch").inputValue(), "tps_below", "what was chosen is kept");
    await page.getByLabel("Value (TPS, or percent of the memory limit)").fill("15");
    await page.getByRole("button", { name: "Add alert rule" }).click();
    await page.getByText("Alert rule added").waitFor();
    await page.getByRole("row", { name: /Lag/ }).getByText("TPS below 15 for 5 min · any server").waitFor();
    await check();
    await page.getByRole("link", { name: "Edit Lag" }).click();
    assert.deepEqual([await page.getByLabel("Watch").inputValue(), await page.getByLabel("For how many minutes").inputValue()], ["tps_below", "5"]);
  });
});
