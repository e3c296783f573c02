import assert from "node:assert/strict";
import { desktop, useConsoleSetting, type Json } from "./console-fixture.ts";

/**
 * Who may use a server's console on the dashboard, in headless Chromium against a whole Outpost
 * with real agents: a member granted the server until an owner revokes it, the live output held
 * only while the tab shows, and nothing for anyone who does not see the server.
 */
describe("dashboard: a server's console, its players and whether it signs players in", function () {
  this.timeout(120_000);
  const { outpost, browser, owner, agents, ran, servers, signIn, run } = useConsoleSetting();

  it("lets a member granted the server use its console; once an owner revokes the grant, the live output stops within seconds and says why", async () => {
    const context = await browser().newContext({ viewport: desktop });
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
      const ownerPage = await signIn(owner(), "olive@example.com", path);
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
    const page = await signIn(owner(), "olive@example.com", `/app/o/acme/servers/${servers.Survival.id}`);
    const live = page.getByRole("log", { name: "Live output" });
    await page.getByText("Connected: commands run on the game server's console").waitFor();
    const isStream = (r: { url(): string }) => new URL(r.url()).pathname.endsWith("/console/events");
    const show = (state: string) =>
      page.evaluate(
        `Object.defineProperty(document, "visibilityState", { value: "${state}", configurable: true }); document.dispatchEvent(new Event("visibilitychange"))`,
      );

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
      const anonymous = await fetch(`${outpost().baseUrl}${base}/${path}`);
      assert.equal(anonymous.status, 401, path);
      assert.equal(((await anonymous.json()) as Json).code, "unauthenticated");
    }
    // An EventSource cannot read an error's body: it gets the refusal as an event.
    const refusedEvent = /^event: refused\ndata: (\{.*\})\n\n$/;
    const anonymousStream = await fetch(`${outpost().baseUrl}${base}/console/events`, { headers: { accept: "text/event-stream" } });
    assert.equal(anonymousStream.status, 200);
    const [, anonymousRefusal] = refusedEvent.exec(await anonymousStream.text()) ?? [];
    assert.deepEqual(JSON.parse(anonymousRefusal), {
      status: 401,
      code: "unauthenticated",
      message: "You are signed out, so the live output stopped. Reload the page to sign in again.",
    });

    // Mo's grant is gone: the stream is refused before it starts.
    const context = await browser().newContext();
    try {
      const page = await signIn(context, "mo@example.com", "/app/o/acme/servers");
      const statuses = await page.evaluate<number[]>(`Promise.all(["${base}/console/events", "${base}/players"].map((u) => fetch(u).then((r) => r.status)))`);
      assert.deepEqual(
        statuses.map((s) => s === 403 || s === 404),
        [true, true],
        String(statuses),
      );
      const stream = await page.evaluate<{ status: number; body: string }>(
        `fetch("${base}/console/events", { headers: { accept: "text/event-stream" } }).then(async (r) => ({ status: r.status, body: await r.text() }))`,
      );
      assert.equal(stream.status, 200);
      const refusal = JSON.parse(refusedEvent.exec(stream.body)?.[1] ?? "null");
      assert.ok(refusal?.status === 403 || refusal?.status === 404, stream.body);
      assert.match(refusal.message, /no longer have access/);
    } finally {
      await context.close();
    }

    // Signed out in another tab: the live output stops within seconds and says so, and the open
    // panel says so instead of running a command.
    const olive = await browser().newContext({ viewport: desktop });
    olive.setDefaultTimeout(10_000);
    try {
      const page = await signIn(olive, "olive@example.com", base);
      const live = page.getByRole("log", { name: "Live output" });
      await page.getByText("Connected: commands run on the game server's console").waitFor();
      const other = await olive.newPage();
      await other.goto(`${outpost().baseUrl}/app/o/acme/servers`);
      await other.getByRole("button", { name: "Sign out" }).click();
      await other.waitForURL(/\/sign-in/);
      await live.getByText("You are signed out, so the live output stopped. Reload the page to sign in again.").waitFor({ timeout: 15_000 });

      // What the server prints next reaches a page still signed in, and not this one.
      const watcher = await signIn(owner(), "olive@example.com", base);
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
    const cookie = (await owner().cookies()).map((c) => `${c.name}=${c.value}`).join("; ");
    const held: AbortController[] = [];
    try {
      // Fill the person's 10 slots: a page closed just before may hold one for a moment yet, so a
      // refusal before the tenth waits and tries again rather than leaving a slot to free later.
      for (let tries = 0; held.length < 10; tries++) {
        assert.ok(tries < 100, `only ${held.length} live consoles could be opened`);
        const abort = new AbortController();
        const status = (await fetch(`${outpost().baseUrl}${base}/console/events`, { headers: { cookie }, signal: abort.signal })).status;
        if (status === 200) held.push(abort);
        else {
          assert.equal(status, 429);
          abort.abort();
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      }
      const page = await signIn(owner(), "olive@example.com", base);
      await page
        .getByRole("log", { name: "Live output" })
        .getByText("The live output is off: you have 10 live consoles open; close one and try again (by reloading this page).")
        // The server's page draws its charts too: under CI's load its scripts take longer than the default 10 s.
        .waitFor({ timeout: 30_000 });
      await page.close();
    } finally {
      for (const abort of held) abort.abort();
    }
  });
});
