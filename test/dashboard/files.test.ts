import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { BrowserContext, Page } from "playwright-core";
import { useFilesSetting } from "./files-fixture.ts";

/** The page's form token, for requests made beside the browser with its cookies. */
const formToken = (page: Page) => page.locator('input[name="form_token"]').first().inputValue();

/** A multipart body of these parts, in this order. */
function multipart(boundary: string, parts: Array<{ name: string; value: string | Buffer; filename?: string }>): Buffer {
  const chunks = parts.flatMap((p) => [
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"${p.filename !== undefined ? `; filename="${p.filename}"\r\nContent-Type: application/octet-stream` : ""}\r\n\r\n`,
    ),
    Buffer.from(p.value),
    Buffer.from("\r\n"),
  ]);
  return Buffer.concat([...chunks, Buffer.from(`--${boundary}--\r\n`)]);
}

/**
 * The files pages beside the browser test (files-browser.test.ts): the editor and the forms
 * without script (line endings as the file had them, the confirmation page), a member's view (their
 * grant's paths only; no write buttons with files_read alone), and the routes themselves: the
 * editor's modules and the CSP that lets exactly its import map and style element in, the upload
 * form's refusals before anything reaches core, a save larger than ordinary forms, and the history
 * and plugins pages.
 */
describe("dashboard: a server's files, without script, for a member, and the routes", function () {
  this.timeout(180_000);
  const { outpost, state, ok, newContext, signIn, check } = useFilesSetting();
  const onDisk = (path: string) => readFileSync(join(state.root, path), "utf8");
  let owner: BrowserContext;

  before(async () => {
    owner = await newContext();
  });

  it("without script: the textarea saves with the file's own line endings, and a delete asks on a page first", async () => {
    const context = await newContext({ javaScriptEnabled: false });
    const page = await signIn(context, "olive@example.com", `${state.base}/files/edit?path=eula.txt`);
    const textarea = page.getByRole("textbox", { name: "Content of eula.txt" });
    assert.equal(await textarea.inputValue(), "eula=true\n");
    assert.equal(await page.locator(".cm-editor").count(), 0);
    await textarea.fill("# agreed by hand\neula=true\n");
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByRole("status").filter({ hasText: "File saved." }).waitFor();
    assert.equal(onDisk("eula.txt"), "# agreed by hand\neula=true\n", "LF as the file had, not the textarea's CRLF");

    writeFileSync(join(state.root, "windows.cfg"), "a=1\r\nb=2\r\n");
    await page.goto(`${outpost().baseUrl}${state.base}/files/edit?path=windows.cfg`);
    await page.getByRole("textbox", { name: "Content of windows.cfg" }).fill("a=1\nb=3\n");
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByRole("status").filter({ hasText: "File saved." }).waitFor();
    assert.equal(onDisk("windows.cfg"), "a=1\r\nb=3\r\n", "CRLF kept where the file had it");

    await page.goto(`${outpost().baseUrl}${state.base}/files`);
    await page.getByLabel("Folder name").fill("a/b");
    await page.getByRole("button", { name: "Create folder" }).click();
    await page.getByText("Give the folder a name, without a slash.").waitFor();
    await page.getByRole("button", { name: "Delete windows.cfg" }).click();
    await page.getByRole("heading", { name: 'Delete "windows.cfg"?' }).waitFor();
    assert.ok(existsSync(join(state.root, "windows.cfg")), "nothing deleted before the confirmation");
    await page.getByRole("button", { name: "Delete" }).click();
    await page.getByRole("status").filter({ hasText: "Deleted." }).waitFor();
    assert.ok(!existsSync(join(state.root, "windows.cfg")));
    await context.close();
  });

  it("a member sees what their grant reaches; with files_read no write buttons and a read-only editor, with files_write a save", async () => {
    const grant = (actions: string[]) =>
      ok("POST", "organizations/createAccessGrant", {
        organizationSlug: "acme",
        userId: state.memberId,
        serverId: state.serverId,
        actions: ["view", ...actions],
        constraints: { filePaths: ["plugins/Essentials"] },
      });
    await grant(["files_read"]);
    const context = await newContext();
    const page = await signIn(context, "mo@example.com", state.base);
    await page.getByRole("region", { name: "Files" }).getByRole("link", { name: "Browse files" }).click();
    await page.getByText("Your grant lets you read files only at these paths").waitFor();
    assert.deepEqual(await page.getByRole("region", { name: "Files in the server's directory" }).locator("td.file-name").allInnerTexts(), ["plugins/"]);
    assert.equal(await page.getByRole("button", { name: "Upload" }).count(), 0);
    assert.equal(await page.getByRole("button", { name: /^Delete/ }).count(), 0);
    assert.equal(await page.getByRole("link", { name: /^Rename/ }).count(), 0);

    await page.goto(`${outpost().baseUrl}${state.base}/files/edit?path=plugins%2FEssentials%2Fconfig.yml`);
    await page.locator(".cm-editor").waitFor();
    await page.getByText("You may read this file, not change it.").waitFor();
    assert.equal(await page.getByRole("button", { name: "Save" }).count(), 0);
    assert.equal(await page.locator(".cm-content").getAttribute("aria-readonly"), "true");
    await check(page, "a member's read-only editor");

    // Outside the grant's paths: core's refusal, in words.
    const outside = await page.goto(`${outpost().baseUrl}${state.base}/files/edit?path=server.properties`);
    assert.equal(outside?.status(), 403);
    await page.getByText(/does not reach "server.properties"/).waitFor();

    await ok("POST", "organizations/revokeAccessGrant", { organizationSlug: "acme", userId: state.memberId, serverId: state.serverId });
    await grant(["files_write"]);
    await page.goto(`${outpost().baseUrl}${state.base}/files/edit?path=plugins%2FEssentials%2Fconfig.yml`);
    await page.locator(".cm-editor .cm-content").click();
    await page.keyboard.press("Control+End");
    await page.keyboard.type("homes: 3\n");
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByRole("status").filter({ hasText: "File saved." }).waitFor();
    assert.match(onDisk("plugins/Essentials/config.yml"), /homes: 3\n$/);
    await context.close();
  });

  it("serves CodeMirror's modules from node_modules, cached for good, through an import map the CSP allows by its hash alone", async () => {
    const page = await signIn(owner, "olive@example.com", `${state.base}/files/edit?path=server.properties`);
    const res = await owner.request.get(`${outpost().baseUrl}${state.base}/files/edit?path=server.properties`);
    const body = await res.text();
    const csp = res.headers()["content-security-policy"];
    const map = /<script type="importmap">([^<]*)<\/script>/.exec(body)![1];
    const hash = createHash("sha256").update(map).digest("base64");
    const scriptSrc = csp.split("; ").find((d) => d.startsWith("script-src"));
    assert.equal(scriptSrc, `script-src 'self' 'sha256-${hash}'`, "scripts: this origin's, and the import map by its hash");
    const nonce = /data-style-nonce="([^"]+)"/.exec(body)![1];
    assert.equal(
      csp.split("; ").find((d) => d.startsWith("style-src")),
      `style-src 'self' 'nonce-${nonce}'`,
    );
    assert.doesNotMatch(csp, /unsafe/);

    const { imports, integrity } = JSON.parse(map) as { imports: Record<string, string>; integrity: Record<string, string> };
    assert.ok(imports["@codemirror/view"] && imports["@lezer/yaml"] && imports["@codemirror/legacy-modes/mode/toml"]);
    for (const href of Object.values(imports)) {
      const module = await fetch(`${outpost().baseUrl}${href}`);
      assert.equal(module.status, 200, href);
      assert.equal(module.headers.get("content-type"), "text/javascript; charset=utf-8");
      assert.equal(module.headers.get("cache-control"), "public, max-age=31536000, immutable");
      const bytes = Buffer.from(await module.arrayBuffer());
      assert.equal(integrity[href], `sha384-${createHash("sha384").update(bytes).digest("base64")}`);
    }
    // Another page's nonce is another.
    const again = await (await owner.request.get(`${outpost().baseUrl}${state.base}/files/edit?path=server.properties`)).text();
    assert.notEqual(/data-style-nonce="([^"]+)"/.exec(again)![1], nonce);
    await page.close();
  });

  it("the upload form: refused before anything reaches core without its token, with the file before the token, or not multipart", async () => {
    const page = await signIn(owner, "olive@example.com", `${state.base}/files`);
    const token = await formToken(page);
    const url = `${outpost().baseUrl}${state.base}/files/upload`;
    const send = (parts: Parameters<typeof multipart>[1]) =>
      owner.request.post(url, { headers: { "content-type": "multipart/form-data; boundary=XyZ" }, data: multipart("XyZ", parts), maxRedirects: 0 });
    const file = { name: "file", filename: "forged.txt", value: "forged" };

    assert.equal((await send([{ name: "path", value: "" }, file])).status(), 403, "no token");
    assert.equal((await send([{ name: "form_token", value: "x".repeat(43) }, file])).status(), 403, "another token");
    assert.equal((await send([file, { name: "form_token", value: token }])).status(), 403, "the file before the token");
    assert.equal((await owner.request.post(url, { form: { form_token: token, path: "" }, maxRedirects: 0 })).status(), 415);
    assert.equal((await send([{ name: "form_token", value: token }])).status(), 400, "no file");
    assert.ok(!existsSync(join(state.root, "forged.txt")));

    const sent = await send([
      { name: "form_token", value: token },
      { name: "path", value: "world" },
      { ...file, filename: "ok.txt", value: "fine\n" },
    ]);
    assert.equal(sent.status(), 303);
    assert.equal(onDisk("world/ok.txt"), "fine\n");
    await page.close();
  });

  it("saves a file larger than the 64 KiB an ordinary form may be", async () => {
    const page = await signIn(owner, "olive@example.com", `${state.base}/files/edit?path=eula.txt`);
    const token = await formToken(page);
    const big = `${"# a long comment line with ünïcödé to percent-encode\n".repeat(20_000)}eula=true\n`;
    const sha = createHash("sha256")
      .update(readFileSync(join(state.root, "eula.txt")))
      .digest("hex");
    const res = await owner.request.post(`${outpost().baseUrl}${state.base}/files/save`, {
      form: { form_token: token, path: "eula.txt", expectedSha256: sha, newline: "lf", content: big },
      maxRedirects: 0,
    });
    assert.equal(res.status(), 303);
    assert.equal(onDisk("eula.txt"), big);
    await page.close();
  });

  it("the history page lists the kept versions and restores one; the plugins page lists the jars", async () => {
    const path = "server.properties";
    const before = onDisk(path);
    const read = await ok("GET", `servers/readFile?serverId=${state.serverId}&path=${path}`);
    await ok("POST", "servers/writeFile", { serverId: state.serverId, path, content: "motd=changed\n", expectedSha256: read.sha256 });
    const page = await signIn(owner, "olive@example.com", `${state.base}/files/history?path=${path}`);
    await page.getByRole("heading", { name: `History of "${path}"` }).waitFor();
    await page.getByRole("region", { name: "Kept versions" }).waitFor();
    await page
      .getByRole("button", { name: /^Restore the version set aside/ })
      .first()
      .click();
    const dialog = page.getByRole("dialog");
    await dialog.getByText(`Restore this version of "${path}"?`).waitFor();
    await dialog.getByRole("button", { name: "Restore" }).click();
    for (let i = 0; onDisk(path) !== before; i++) {
      assert.ok(i < 100, "the version kept before the write is back");
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    // The restore's answer brings the page to the editor, saying so: only then go on (a navigation
    // started before it ends would be cut short by it).
    await page.waitForURL(/notice=version-restored/);

    await page.goto(`${outpost().baseUrl}${state.base}/plugins`);
    await page.getByRole("heading", { name: "Plugins and mods", level: 1 }).waitFor();
    await page.getByRole("region", { name: "Plugins and mods of Survival" }).or(page.getByText("No plugins or mods are installed.")).waitFor();
    await check(page, "the plugins page");
    await page.close();
  });
});
