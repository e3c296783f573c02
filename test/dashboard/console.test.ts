import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { desktop, steve, alex, useConsoleSetting } from "./console-fixture.ts";
import { GameState } from "../../agent/client.ts";

/**
 * A server's console on its dashboard page, in headless Chromium against a whole Outpost with real
 * agents (the agent library over HTTP/2): a command typed in the panel runs on the agent's console
 * handler and its output comes back; lines the agent streams appear live; the players online; each
 * refusal (bad command, offline, no console, no answer, no access) said in words; without script
 * the form still runs the command. And every server says whether it can sign players in. Who may use it: console-access.test.ts.
 */
describe("dashboard: a server's console, its players and whether it signs players in", function () {
  this.timeout(120_000);
  const { browser, owner, agents, ran, servers, signIn, check, run } = useConsoleSetting();

  it("says on the list and on each server's page whether the server can sign players in", async () => {
    const page = await signIn(owner(), "olive@example.com", "/app/o/acme/servers");
    const trust = (name: string) => page.getByRole("row", { name: new RegExp(`^${name}`) }).locator('[data-field="trust"]');
    assert.equal(await trust("Survival").textContent(), "Verifies players (online mode)");
    assert.equal(await trust("Proxy SMP").textContent(), "Behind an authenticating proxy");
    assert.equal(await trust("Cracked").textContent(), "Offline mode — sign-in refused");
    await check(page, "servers with sign-in trust");

    // An agent that runs the server's process says how it is doing (wrap does; this one is told to).
    agents[2].setGameState(GameState.CRASHED, "exit code 3; starting it again in 10 s");
    await page.getByRole("link", { name: "Cracked" }).click();
    const facts = page.locator("dl.facts");
    await facts.getByText("Offline mode — sign-in refused").waitFor();
    assert.match(await facts.innerText(), /cannot prove who a player is/);
    for (let i = 0; i < 50 && !(await facts.innerText()).includes("Crashed"); i++) await page.reload();
    assert.match(await facts.innerText(), /Server process\s+Crashed exit code 3; starting it again in 10 s/i);
    await page.close();
  });

  it("runs a command typed in the panel on the agent and shows its output; lines the agent streams appear live", async () => {
    const page = await signIn(owner(), "olive@example.com", `/app/o/acme/servers/${servers.Survival.id}`);
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
    const page = await signIn(owner(), "olive@example.com", `/app/o/acme/servers/${servers.Survival.id}`);
    await page.getByText("Connected: commands run on the game server's console").waitFor();
    // Longer than the field allows (set by script, as a crafted post would be): the API's 400.
    await page.evaluate(`document.getElementById("console-command").value = "x".repeat(1001)`);
    await page.getByRole("button", { name: "Run" }).click();
    await page
      .locator(".console-result")
      .last()
      .getByText(/This is not a command Outpost can send/)
      .waitFor();

    const busy = await run(page, "busy now");
    await busy.getByText("Not run").waitFor();
    await busy.getByText("the console is busy").waitFor();

    const hang = await run(page, "hang");
    await hang.getByText(/No answer came from the server/).waitFor({ timeout: 30_000 });
    await hang.getByText("No answer", { exact: true }).waitFor();
    // The connection fails before the answer comes: the command may have run, so not "Refused" either.
    await page.route("**/console", (route) => route.abort("connectionreset"));
    const cut = await run(page, "say cut off");
    await cut.getByText(/The connection failed before the answer came/).waitFor();
    await cut.getByText("No answer", { exact: true }).waitFor();
    await page.unroute("**/console");
    await check(page, "console refusals");
    await page.close();

    const proxied = await signIn(owner(), "olive@example.com", `/app/o/acme/servers/${servers["Proxy SMP"].id}`);
    await proxied
      .getByText(/cannot reach the game's console/)
      .first()
      .waitFor();
    const noConsole = await run(proxied, "list");
    await noConsole.getByText(/The server cannot run commands now/).waitFor();
    await proxied.close();

    const cracked = await signIn(owner(), "olive@example.com", `/app/o/acme/servers/${servers.Cracked.id}`);
    await cracked.getByText("Connected: commands run on the game server's console").waitFor();
    await agents[2].stop();
    await cracked.getByText("The server is offline: commands are refused until its agent connects.").waitFor({ timeout: 15_000 });
    const offline = await run(cracked, "list");
    await offline.getByText(/The server cannot run commands now/).waitFor();
    assert.equal(ran.filter((c) => c === "list").length, 1, "neither refused command reached an agent");
    await cracked.close();
  });

  it("works without script: the form runs the command and the page comes back with its output, or with why not", async () => {
    const context = await browser().newContext({ viewport: desktop, javaScriptEnabled: false });
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
    const page = await signIn(owner(), "olive@example.com", `/app/o/acme/servers/${servers.Survival.id}`);
    const post = async (command: string) => {
      await page.evaluate(`document.getElementById("console-command").value = ${JSON.stringify(command)}`);
      const [response] = await Promise.all([
        page.waitForNavigation(),
        page.evaluate(`HTMLFormElement.prototype.submit.call(document.querySelector("form[data-console-form]"))`),
      ]);
      return response!.status();
    };
    assert.equal(await post("list"), 200);
    await page.getByRole("log", { name: "Command output" }).getByText("There are 2 of a max of 20 players online: Steve, Alex").waitFor();
    await check(page, "console output without script");
    assert.equal(await post("hang"), 504);
    const unanswered = page.getByRole("log", { name: "Command output" }).locator(".console-result");
    await unanswered.getByText(/No answer came from the server/).waitFor();
    assert.equal(await unanswered.locator(".status").textContent(), "No answer");
    assert.equal(await post("x".repeat(1001)), 400);
    const field = page.getByLabel("Command", { exact: true });
    assert.equal(await field.getAttribute("aria-invalid"), "true");
    assert.equal(await field.inputValue(), "x".repeat(1001), "the command is kept to correct");
    await page
      .locator("#console-command-error")
      .getByText(/This is not a command Outpost can send/)
      .waitFor();
    await check(page, "console refusal without script");
    await page.close();
  });
});
