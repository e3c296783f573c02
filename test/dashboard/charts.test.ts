import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import type { Browser, Page } from "playwright-core";
import { assertAccessible, launchChromium, signedInPage } from "../support/browser.ts";
import { useWrapSetting } from "../agent/wrap-fixture.ts";
import { rollUp } from "../../core/stats/rollup.ts";
import { seriesOf } from "../support/stats.ts";

/**
 * Charts, in headless Chromium against a whole Outpost and the real `outpost-agent wrap` sampling a
 * stand-in game server: the server's page draws players, CPU and memory from what the agent
 * reported, says each in words with a data table, follows new figures by itself and passes axe;
 * the list of servers has a sparkline per server, the organization's overview players across
 * servers, and a Game OAuth client's page its sign-ins per day.
 */
describe("dashboard: charts", function () {
  this.timeout(120_000);
  const { outpost, seeded, callback, createServer, eventually, wrap, connected } = useWrapSetting({ dashboard: true });
  let browser: Browser;
  const errors: string[] = [];

  before(async () => {
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
  });

  const signIn = (path: string, clock = false): Promise<Page> => signedInPage(browser, outpost().baseUrl, path, errors, { clock, height: 900 });

  /** Waits until the agent's samples say `players` players. */
  async function sampled(serverId: string, players: number): Promise<void> {
    for (let i = 0; ; i++) {
      const from = new Date(Date.now() - 3600_000).toISOString();
      const to = new Date(Date.now() + 60_000).toISOString();
      const answer = await seeded().api("GET", `servers/getServerStats?serverId=${serverId}&from=${from}&to=${to}&metrics=players`);
      if (seriesOf(answer).players.some((p) => p.worst === players)) return;
      assert.ok(i < 80, `no sample of ${players} players yet`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  const figure = (page: Page, name: string) => page.getByRole("figure", { name });

  it("draws a server's players, CPU and memory with their words and tables, follows new figures, and passes axe", async () => {
    const server = await createServer("Charted SMP");
    const wrapped = wrap(server.key, ["--format", "paper"], { extra: ["--auth", "online", "--stats-seconds", "0.5"] });
    await connected(wrapped);
    await eventually(server.id, (s) => s.gameState === "running");
    wrapped.send(`player join Steve ${randomUUID()}`);
    await sampled(server.id, 1);

    const page = await signIn(`/app/o/acme/servers/${server.id}`, true);
    const panel = page.getByRole("region", { name: "How it is doing" });
    for (const name of ["Players online", "CPU (percent of one core)", "Memory (resident)"]) {
      await figure(page, name).locator(".uplot canvas").waitFor();
    }
    const players = figure(page, "Players online");
    assert.match((await players.locator(".chart-summary").textContent()) ?? "", /peak 1 over the last hour; latest 1\./);
    assert.match((await figure(page, "Memory (resident)").locator(".chart-summary").textContent()) ?? "", /Average [\d.]+ MiB, peak [\d.]+ MiB/);
    await players.getByText("Data table: Players online").click();
    const rows = players.locator(".chart-table tbody tr");
    assert.ok((await rows.count()) >= 1);
    assert.match((await rows.last().textContent()) ?? "", /UTC11/, "time, average 1, peak 1");
    assert.equal(await panel.getByRole("link", { name: "Hour" }).getAttribute("aria-current"), "true");
    await assertAccessible(page, "server with charts");

    // A second player: the panel fetches itself again after its 10 seconds and says so, the table still open.
    wrapped.send(`player join Alex ${randomUUID()}`);
    await sampled(server.id, 2);
    await page.clock.runFor(11_000);
    await players.locator(".chart-summary", { hasText: "peak 2" }).waitFor();
    assert.equal(await players.locator("details").getAttribute("open"), "", "the table stays open");
    await players.locator(".uplot canvas").waitFor();

    await panel.getByRole("link", { name: "Day" }).click();
    await page.waitForURL(/range=day/);
    await page.getByText("The last day, a point every 5 minutes").waitFor();
    await assertAccessible(page, "server charts, a day");
    assert.deepEqual(errors, []);
    await page.context().close();
    assert.equal(await wrapped.stop("SIGTERM"), 0);
  });

  it("draws a sparkline per server, players across servers on the overview, and a client's sign-ins per day", async () => {
    const server = await createServer("Sparkling SMP");
    const wrapped = wrap(server.key, ["--format", "paper"], { extra: ["--auth", "online", "--stats-seconds", "0.5"] });
    await connected(wrapped);
    wrapped.send(`player join Steve ${randomUUID()}`);
    await sampled(server.id, 1);
    // The last day is read from the minute rollups: fold the minute under way now rather than wait for it.
    const runtime = outpost().current()!.runtime;
    await rollUp(runtime.deps.statements.on(runtime.orm.em.fork()), new Date(Date.now() + 90_000), runtime.deps.config.statsRetention);

    const page = await signIn("/app/o/acme/servers");
    const spark = page.getByRole("img", { name: /^Players of Sparkling SMP over the last day: peak 1, latest 1$/ });
    await spark.waitFor();
    assert.ok(Number(await spark.locator("polyline").evaluate((e) => e.getAttribute("points")?.split(" ").length ?? 0)) >= 2);
    await assertAccessible(page, "servers with sparklines");

    await page.goto(`${outpost().baseUrl}/app/o/acme`);
    const across = figure(page, "Players online across servers");
    await across.locator(".uplot canvas").waitFor();
    assert.match((await across.locator(".chart-summary").textContent()) ?? "", /peak [1-9]/);
    await assertAccessible(page, "overview with players");

    // A sign-in started (the hosted page opened) and left: counted the same day.
    const { clientId } = seeded();
    const authorize = new URL("/oauth2/authorize", outpost().gameIssuerUrl);
    authorize.search = new URLSearchParams({ client_id: clientId, redirect_uri: callback().redirectUri, response_type: "code", scope: "openid", state: "s" }).toString();
    await fetch(authorize, { redirect: "manual" });
    await page.goto(`${outpost().baseUrl}/app/o/acme/clients/${clientId}`);
    const signIns = figure(page, "Sign-ins per day");
    await signIns.locator(".uplot canvas").waitFor();
    assert.match((await signIns.locator(".chart-summary").textContent()) ?? "", /Over the last 30 days [1-9]\d* sign-ins started/);
    assert.equal(await signIns.locator(".chart-table tbody tr").count(), 30, "a row a day");
    await assertAccessible(page, "client with sign-ins");
    assert.deepEqual(errors, []);
    await page.context().close();
    assert.equal(await wrapped.stop("SIGTERM"), 0);
  });
});
