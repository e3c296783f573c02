import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { serverFiles, useFilesSetting } from "./files-fixture.ts";

const artifacts = new URL("../../.test-artifacts/", import.meta.url);

async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(artifacts, { recursive: true });
  await page.screenshot({ path: new URL(`${name}.png`, artifacts).pathname, fullPage: true });
}

/**
 * A server's files in the dashboard, in headless Chromium against a whole Outpost and the real
 * `outpost-agent wrap` around a stand-in server in a directory of its own: the person browses to a
 * folder and back, makes, renames and deletes a folder, edits server.properties in CodeMirror and
 * saves it, meets a conflict (the file changed on disk meanwhile: both versions shown, nothing
 * overwritten) and resolves it either way, uploads and downloads. Every change is checked on disk.
 * Screenshots go to .test-artifacts/.
 */
describe("dashboard: a server's files in the browser", function () {
  this.timeout(180_000);
  const { outpost, state, newContext, signIn, check } = useFilesSetting();
  const onDisk = (path: string) => readFileSync(join(state.root, path), "utf8");
  const names = (page: Page, label: string) => page.getByRole("region", { name: label }).locator("td.file-name").allInnerTexts();

  it("browses from the server's page into a folder and back; makes, renames and deletes a folder (after a dialog)", async () => {
    const context = await newContext();
    const page = await signIn(context, "olive@example.com", state.base);
    const panel = page.getByRole("region", { name: "Files" });
    await panel.getByText("The agent lets Outpost list, read and change the server's files.").waitFor();
    await panel.getByRole("link", { name: "Browse files" }).click();
    await page.getByRole("heading", { name: "Files", level: 1 }).waitFor();
    await page.getByText("As an owner or admin you may read and change files everywhere the agent allows.").waitFor();
    assert.deepEqual(await names(page, "Files in the server's directory"), ["plugins/", "world/", "eula.txt", "server.properties"], "folders first, then files");

    await page.getByRole("link", { name: "plugins/" }).click();
    assert.deepEqual(await names(page, "Files in plugins"), ["Essentials/", "Essentials.jar"]);
    await page.getByRole("link", { name: "Essentials/" }).click();
    const trail = page.getByRole("navigation", { name: "Folder" });
    assert.deepEqual(await trail.getByRole("listitem").allInnerTexts(), ["Server directory", "plugins", "Essentials"]);
    assert.deepEqual(await names(page, "Files in plugins/Essentials"), ["config.yml"]);
    await check(page, "a folder of the file browser");
    await trail.getByRole("link", { name: "plugins" }).click();
    await page.getByRole("region", { name: "Files in plugins" }).waitFor();
    await screenshot(page, "files-browser");

    await page.getByLabel("Folder name").fill("backups");
    await page.getByRole("button", { name: "Create folder" }).click();
    await page.getByRole("status").filter({ hasText: "Folder created." }).waitFor();
    await page.getByText("This folder is empty.").waitFor();
    assert.ok(existsSync(join(state.root, "plugins/backups")), "the folder is on disk");
    writeFileSync(join(state.root, "plugins/backups/world-1.zip"), "zip");

    await page.getByRole("navigation", { name: "Folder" }).getByRole("link", { name: "plugins" }).click();
    await page.getByRole("link", { name: "Rename or move backups" }).click();
    await page.getByLabel("New path").fill("plugins/old-backups");
    await page.getByRole("button", { name: "Rename or move" }).click();
    await page.getByRole("status").filter({ hasText: "Moved." }).waitFor();
    assert.ok(existsSync(join(state.root, "plugins/old-backups/world-1.zip")) && !existsSync(join(state.root, "plugins/backups")));

    await page.getByRole("button", { name: "Delete old-backups" }).click();
    const dialog = page.getByRole("dialog");
    await dialog.getByText('Delete the folder "old-backups" and everything in it?').waitFor();
    await dialog.getByText("The folder is deleted with every file and folder in it.").waitFor();
    await dialog.getByRole("button", { name: "Delete" }).click();
    await page.getByRole("status").filter({ hasText: "Deleted." }).waitFor();
    assert.ok(!existsSync(join(state.root, "plugins/old-backups")), "gone from disk, with what it held");
    await context.close();
  });

  it("edits server.properties in CodeMirror and saves it; a conflict shows both versions and overwrites nothing", async () => {
    const context = await newContext();
    const page = await signIn(context, "olive@example.com", `${state.base}/files`);
    await page.getByRole("link", { name: "server.properties", exact: true }).click();
    await page.getByRole("heading", { name: "server.properties", level: 1 }).waitFor();
    const editor = page.locator(".cm-editor");
    await editor.waitFor();
    await editor.locator(".cm-lineNumbers .cm-gutterElement", { hasText: /^3$/ }).waitFor({ state: "visible" });
    assert.equal(await page.locator("textarea#file-content").isHidden(), true, "CodeMirror takes the textarea's place");
    assert.ok((await editor.locator(".cm-line span").count()) > 0, "the .properties mode highlights keys and values");
    assert.equal(await page.getByRole("textbox", { name: "Content of server.properties" }).count(), 1, "the editor keeps the label");
    await check(page, "the editor");
    await screenshot(page, "file-editor");

    await editor.locator(".cm-content").click();
    await page.keyboard.press("Control+End");
    await page.keyboard.type("view-distance=12\n");
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByRole("status").filter({ hasText: "File saved." }).waitFor();
    const saved = `${serverFiles["server.properties"]}view-distance=12\n`;
    assert.equal(onDisk("server.properties"), saved);

    // Someone changes the file on the machine while the editor is open.
    const theirs = "motd=Changed by hand\nmax-players=50\n";
    writeFileSync(join(state.root, "server.properties"), theirs);
    await page.locator(".cm-editor .cm-content").click();
    await page.keyboard.press("Control+End");
    await page.keyboard.type("difficulty=hard\n");
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByRole("alert").getByText("The file changed on the server after you opened it.").waitFor();
    const mine = `${saved}difficulty=hard\n`;
    assert.equal(onDisk("server.properties"), theirs, "nothing was written over their version");
    assert.equal(await page.locator("textarea#theirs").inputValue(), theirs);
    assert.equal(await page.locator("textarea#yours").inputValue(), mine);
    assert.equal(await page.locator(".cm-editor").count(), 2, "both versions in an editor");
    await check(page, "an edit conflict");
    await screenshot(page, "file-conflict");

    // Keep editing from their version.
    await page.getByRole("region", { name: "Now on the server" }).locator(".cm-content").click();
    await page.keyboard.press("Control+End");
    await page.keyboard.type("pvp=false\n");
    await page.getByRole("button", { name: "Save from their version" }).click();
    await page.getByRole("status").filter({ hasText: "File saved." }).waitFor();
    assert.equal(onDisk("server.properties"), `${theirs}pvp=false\n`);

    // Another change meanwhile; this time the person's version wins, deliberately.
    writeFileSync(join(state.root, "server.properties"), "motd=Again\n");
    await page.locator(".cm-editor .cm-content").click();
    await page.keyboard.press("Control+End");
    await page.keyboard.type("hardcore=true\n");
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByRole("button", { name: "Save my version over theirs" }).click();
    await page.getByRole("status").filter({ hasText: "File saved." }).waitFor();
    assert.equal(onDisk("server.properties"), `${theirs}pvp=false\nhardcore=true\n`);
    await context.close();
  });

  it("offers a file that is not text, or larger than 5 MiB, for download instead of the editor", async () => {
    writeFileSync(join(state.root, "big.log"), "x".repeat(6 * 1024 * 1024));
    const context = await newContext();
    const page = await signIn(context, "olive@example.com", `${state.base}/files/edit?path=world%2Flevel.dat`);
    await page.getByText("This file is not UTF-8 text, so it cannot be edited here. Download it instead.").waitFor();
    assert.equal(await page.locator("textarea").count(), 0);
    assert.equal(
      await page.getByRole("link", { name: "Download" }).getAttribute("href"),
      `/api/http/servers/downloadFile?serverId=${state.serverId}&path=world%2Flevel.dat`,
    );
    await page.goto(`${outpost().baseUrl}${state.base}/files/edit?path=big.log`);
    await page.getByText("This file is larger than 5 MiB, too large to edit here. Download it instead.").waitFor();
    await context.close();
  });

  it("with script, sends chosen and dropped files one after another to PUT servers/uploadFile, and says why one was refused", async () => {
    // The browser stands in for the route here, so this holds with or without it; the next test uses the real one.
    const context = await newContext();
    const page = await signIn(context, "olive@example.com", `${state.base}/files?path=plugins`);
    const sent: Array<{ method: string; path: string | null; type: string | undefined; body: string }> = [];
    let refuse = false;
    await page.route("**/api/http/servers/uploadFile?**", async (route) => {
      const request = route.request();
      const url = new URL(request.url());
      sent.push({ method: request.method(), path: url.searchParams.get("path"), type: request.headers()["content-type"], body: request.postData() ?? "" });
      assert.equal(url.searchParams.get("serverId"), state.serverId);
      if (refuse)
        return route.fulfill({
          status: 409,
          contentType: "application/json",
          body: JSON.stringify({ code: "failed_precondition", status: 409, message: "the server's agent is offline" }),
        });
      await route.fulfill({ status: 200, contentType: "application/json", body: JSON.stringify({ path: url.searchParams.get("path"), size: "1", sha256: "" }) });
    });
    await page.getByText("Or drop files here.").waitFor();
    await page.getByLabel("File", { exact: true }).setInputFiles({ name: "a.yml", mimeType: "text/yaml", buffer: Buffer.from("a: 1\n") });
    await page.getByRole("button", { name: "Upload" }).click();
    await page.waitForURL((u) => u.searchParams.get("notice") === "file-uploaded" && u.searchParams.get("path") === "plugins");
    assert.deepEqual(sent, [{ method: "PUT", path: "plugins/a.yml", type: "application/octet-stream", body: "a: 1\n" }]);

    refuse = true;
    const transfer = await page.evaluateHandle(
      `(() => { const data = new DataTransfer(); data.items.add(new File(["one"], "one.txt")); data.items.add(new File(["two"], "two.txt")); return data; })()`,
    );
    await page.dispatchEvent("form[data-upload]", "drop", { dataTransfer: transfer });
    await page.getByText("Not uploaded: the server's agent is offline.").waitFor();
    assert.deepEqual(
      sent.slice(1).map((s) => s.path),
      ["plugins/one.txt"],
      "the second waits for the first, and is not sent after a refusal",
    );
    assert.equal(await page.getByRole("button", { name: "Upload" }).isEnabled(), true);
    await context.close();
  });

  it("uploads through the form with script: a progress bar, the file on disk", async () => {
    const context = await newContext();
    const page = await signIn(context, "olive@example.com", `${state.base}/files?path=plugins`);
    const content = Buffer.alloc(3 * 1024 * 1024 + 17, 7);
    await page.getByLabel("File", { exact: true }).setInputFiles({ name: "Big.jar", mimeType: "application/java-archive", buffer: content });
    await page.getByRole("button", { name: "Upload" }).click();
    await page.getByRole("status").filter({ hasText: "Uploaded." }).waitFor();
    assert.deepEqual(readFileSync(join(state.root, "plugins/Big.jar")), content);
    // Once uploaded, the page shows the folder again, the new file in it.
    await page.locator("td.file-name", { hasText: "Big.jar" }).waitFor();

    // Dropped on the form, as from a file manager.
    const transfer = await page.evaluateHandle(
      `(() => { const data = new DataTransfer(); data.items.add(new File(["dropped\\n"], "dropped.txt", { type: "text/plain" })); return data; })()`,
    );
    await page.dispatchEvent("form[data-upload]", "drop", { dataTransfer: transfer });
    await page.locator("td.file-name", { hasText: "dropped.txt" }).waitFor();
    assert.equal(onDisk("plugins/dropped.txt"), "dropped\n");
    await context.close();
  });

  it("uploads through the form without script, streamed into servers/uploadFile", async () => {
    const context = await newContext({ javaScriptEnabled: false });
    const page = await signIn(context, "olive@example.com", `${state.base}/files?path=world`);
    const content = Buffer.alloc(2 * 1024 * 1024 + 5, 3);
    await page.getByLabel("File", { exact: true }).setInputFiles({ name: "region.mca", mimeType: "application/octet-stream", buffer: content });
    await page.getByRole("button", { name: "Upload" }).click();
    await page.getByRole("status").filter({ hasText: "Uploaded." }).waitFor();
    assert.deepEqual(readFileSync(join(state.root, "world/region.mca")), content);
    await context.close();
  });

  it("downloads a file from the listing", async () => {
    const context = await newContext();
    const page = await signIn(context, "olive@example.com", `${state.base}/files`);
    const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("link", { name: "Download eula.txt" }).click()]);
    assert.equal(download.suggestedFilename(), "eula.txt");
    assert.equal(readFileSync((await download.path())!, "utf8"), onDisk("eula.txt"));
    await context.close();
  });
});
