import assert from "node:assert/strict";
import type { Browser, Page } from "playwright-core";
import { assertAccessible, launchChromium, signedInPage } from "../support/browser.ts";
import { useWrapSetting } from "../agent/wrap-fixture.ts";

/**
 * Start and stop on a server's dashboard page, in headless Chromium against a whole Outpost and the
 * real `outpost-agent wrap` around a stand-in game server: the owner stops it (confirming first),
 * watches the page say so without reloading, and starts it again; the panel passes axe; a server
 * whose agent does not run its process shows no panel; and the server's schedules page adds, runs,
 * pauses and deletes schedules, showing each one's next times in its own zone.
 */
describe("dashboard: start and stop a server", function () {
  this.timeout(120_000);
  const { outpost, createServer, eventually, wrap, connected } = useWrapSetting({ dashboard: true });
  let browser: Browser;
  const errors: string[] = [];

  before(async () => {
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
  });

  const signIn = (path: string): Promise<Page> => signedInPage(browser, outpost().baseUrl, path, errors);

  it("stops the server after asking, shows it stopped as it happens, and starts it again", async () => {
    const server = await createServer("Dashboard SMP");
    const wrapped = wrap(server.key, ["--format", "paper"]);
    await connected(wrapped);
    await eventually(server.id, (s) => s.gameState === "running");
    const page = await signIn(`/app/o/acme/servers/${server.id}`);
    const state = page.locator('[data-field="game-state"]');
    assert.equal(await state.textContent(), "Running");
    const panel = page.getByRole("region", { name: "Start and stop" });
    await assertAccessible(page, "server with start and stop");

    let since = wrapped.output().length;
    await panel.getByRole("button", { name: "Stop", exact: true }).click();
    const dialog = page.getByRole("dialog");
    await dialog.getByText("It saves and stops; players are disconnected.").waitFor();
    await dialog.getByRole("button", { name: "Stop", exact: true }).click();
    await page.waitForURL(/notice=server-stopping/);
    await page.getByRole("status").getByText("The server is stopping: it saves first.").waitFor();
    await wrapped.waitFor(/stdin> stop\n/, since);
    // The page follows the game's state by itself (the live status poll), and says the detail.
    await page.locator('[data-field="game-state"]', { hasText: "Stopped" }).waitFor();
    assert.equal(await page.locator('[data-field="game-state-detail"]').textContent(), "exit code 0; stopped from Outpost");
    assert.match((await page.locator('[data-field="status"]').first().textContent()) ?? "", /Online/, "the agent stays connected");

    since = wrapped.output().length;
    await panel.getByRole("button", { name: "Start", exact: true }).click();
    await page.waitForURL(/notice=server-starting/);
    await wrapped.waitFor(/stand-in pid \d+/, since);
    await page.locator('[data-field="game-state"]', { hasText: "Running" }).waitFor();

    await panel.getByRole("button", { name: "Start", exact: true }).click();
    await page.getByRole("status").getByText("Nothing to do: the server already was as asked.").waitFor();
    await assertAccessible(page, "server started again");
    assert.deepEqual(errors, []);
    await page.context().close();
    assert.equal(await wrapped.stop("SIGTERM"), 0);
  });

  it("says why when the agent is gone, and shows no panel for a server whose agent does not run its process", async () => {
    const server = await createServer("Gone SMP");
    const wrapped = wrap(server.key, ["--format", "paper"]);
    await connected(wrapped);
    await eventually(server.id, (s) => s.gameState === "running");
    const page = await signIn(`/app/o/acme/servers/${server.id}`);
    const panel = page.getByRole("region", { name: "Start and stop" });
    await panel.waitFor();
    // The agent goes away while the page is open: the request finds it offline.
    await wrapped.stop("SIGKILL");
    await eventually(server.id, (s) => !s.online);
    await panel.getByRole("button", { name: "Start", exact: true }).click();
    await page
      .getByRole("alert")
      .getByText(/The server's agent cannot do that now: the server's agent is offline/)
      .waitFor();
    await assertAccessible(page, "start refused");

    const never = await createServer("Plugin SMP");
    await page.goto(`${outpost().baseUrl}/app/o/acme/servers/${never.id}`);
    await page.getByRole("heading", { name: "Plugin SMP" }).waitFor();
    assert.equal(await page.getByRole("region", { name: "Start and stop" }).count(), 0);
    assert.deepEqual(errors, []);
    await page.context().close();
  });

  it("adds schedules on the server's page of schedules, with their next runs in their zone, runs one now, pauses and deletes one", async () => {
    const server = await createServer("Scheduled SMP");
    const wrapped = wrap(server.key, ["--format", "paper"]);
    await connected(wrapped);
    await eventually(server.id, (s) => s.gameState === "running");
    const page = await signIn(`/app/o/acme/servers/${server.id}`);
    await page.getByRole("link", { name: "Manage schedules" }).click();
    await page.getByRole("heading", { name: "Schedules of Scheduled SMP" }).waitFor();

    // A bad one comes back with what is wrong, and what was typed.
    await page.getByLabel("Name").fill("Broken");
    await page.getByLabel("When (cron: minute hour day month weekday)").fill("0 4 * *");
    await page.getByLabel("Time zone").fill("Mars/Olympus");
    await page.getByRole("button", { name: "Add schedule" }).click();
    await page
      .getByText(/must have five fields/)
      .first()
      .waitFor();
    await page
      .getByText(/is not a time zone this server knows/)
      .first()
      .waitFor();
    assert.equal(await page.getByLabel("Name").inputValue(), "Broken");
    await assertAccessible(page, "schedule refused");

    await page.getByLabel("Name").fill("Nightly restart");
    await page.getByLabel("When (cron: minute hour day month weekday)").fill("0 4 * * *");
    await page.getByLabel("Time zone").fill("Europe/Berlin");
    await page.getByRole("button", { name: "Add schedule" }).click();
    await page.waitForURL(/notice=schedule-created/);
    const nightly = page.getByRole("row", { name: /^Nightly restart/ });
    const times = await nightly.locator("ol time").allTextContents();
    assert.equal(times.length, 5);
    for (const time of times) assert.match(time, /04:00$/, "in the schedule's own zone");
    assert.match(await nightly.innerText(), /Restart the server, warning 10, 5, 1 min before/);

    await page.getByLabel("Name").fill("Hello");
    await page.getByLabel("What").selectOption("broadcast");
    await page.getByLabel("Command or message").fill("hello from the schedule");
    await page.getByRole("button", { name: "Add schedule" }).click();
    await page.waitForURL(/notice=schedule-created/);
    const since = wrapped.output().length;
    await page.getByRole("button", { name: "Run now: Hello" }).click();
    await page.waitForURL(/notice=schedule-ran/);
    await wrapped.waitFor(/stdin> say hello from the schedule/, since);
    const hello = page.getByRole("row", { name: /^Hello/ });
    assert.match(await hello.innerText(), /Done .* \(by hand\)/);
    await assertAccessible(page, "schedules");

    await page.getByRole("button", { name: "Pause Nightly restart" }).click();
    await page.waitForURL(/notice=schedule-paused/);
    assert.match(await nightly.innerText(), /Paused/);
    await page.getByRole("button", { name: "Delete Hello" }).click();
    await page.getByRole("dialog").getByRole("button", { name: "Delete" }).click();
    await page.waitForURL(/notice=schedule-deleted/);
    assert.equal(await page.getByRole("row", { name: /^Hello/ }).count(), 0);
    assert.deepEqual(errors, []);
    await page.context().close();
    assert.equal(await wrapped.stop("SIGTERM"), 0);
  });
});
