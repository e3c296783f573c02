import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { refused, useFilesSetting, type Json } from "./files-fixture.ts";

const sha256 = (content: Buffer) => createHash("sha256").update(content).digest("hex");

/**
 * servers/downloadFile and servers/uploadFile over HTTP, the raw bytes of files larger than any
 * message, through Outpost and the real `outpost-agent wrap` in pieces, checked on disk.
 */
describe("servers: file downloads and uploads through the agent", function () {
  this.timeout(120_000);
  const setting = useFilesSetting();
  const { ok, wrapped, grant } = setting;
  const url = (route: string, params: Record<string, string>) => `${setting.outpost().baseUrl}/api/http/servers/${route}?${new URLSearchParams(params)}`;
  const download = (params: Record<string, string>, key = setting.ownerKey()) => fetch(url("downloadFile", params), { headers: { "x-api-key": key } });
  const upload = (params: Record<string, string>, body: Uint8Array, key = setting.ownerKey()) =>
    fetch(url("uploadFile", params), { method: "PUT", headers: { "x-api-key": key, "content-type": "application/octet-stream" }, body, duplex: "half" } as RequestInit);
  const answer = async (res: Response) => ({ status: res.status, body: (await res.json()) as Json });

  it("downloads a file of several pieces as raw bytes, named, and refuses what readFile refuses", async () => {
    const content = randomBytes(3 * 1024 * 1024 + 12_345);
    const server = await wrapped("Download", { "world/region/r.0.0.mca": content, "empty.txt": "", "secrets/key": "x" }, ["--files-deny", "secrets/**"]);
    const res = await download({ serverId: server.id, path: "world/region/r.0.0.mca" });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), "application/octet-stream");
    assert.equal(res.headers.get("content-length"), String(content.length));
    assert.equal(res.headers.get("content-disposition"), `attachment; filename="r.0.0.mca"; filename*=UTF-8''r.0.0.mca`);
    assert.ok(Buffer.from(await res.arrayBuffer()).equals(content));

    const empty = await download({ serverId: server.id, path: "empty.txt" });
    assert.deepEqual([empty.status, (await empty.arrayBuffer()).byteLength], [200, 0]);
    assert.deepEqual(refused(await answer(await download({ serverId: server.id, path: "secrets/key" }))), [404, "not_found"]);
    assert.deepEqual(refused(await answer(await download({ serverId: server.id, path: "world" }))), [409, "not_a_regular_file"]);
    assert.deepEqual(refused(await answer(await download({ serverId: server.id, path: "../canary.txt" }))), [400, "outside_root"]);
    const post = await fetch(url("downloadFile", { serverId: server.id, path: "empty.txt" }), { method: "POST", headers: { "x-api-key": setting.ownerKey() } });
    assert.deepEqual([post.status, post.headers.get("allow")], [405, "GET"]);
  });

  it("uploads a raw body of several pieces, written whole and atomically, on record; a stale expectedSha256 writes nothing", async () => {
    const server = await wrapped("Upload", { "plugins/Old.jar": "old jar" });
    const jar = randomBytes(2 * 1024 * 1024 + 777);
    const res = await answer(await upload({ serverId: server.id, path: "plugins/New.jar" }, jar));
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual([res.body.path, res.body.size, res.body.sha256], ["plugins/New.jar", String(jar.length), sha256(jar)]);
    assert.ok(readFileSync(join(server.root, "plugins/New.jar")).equals(jar));
    assert.deepEqual(
      readdirSync(join(server.root, "plugins")).filter((name) => name.endsWith(".tmp")),
      [],
      "no temporary file left",
    );

    const replaced = await answer(
      await upload({ serverId: server.id, path: "plugins/Old.jar", expectedSha256: sha256(Buffer.from("not what is there")) }, Buffer.from("new")),
    );
    assert.deepEqual(refused(replaced), [409, "edit_conflict"]);
    assert.equal(readFileSync(join(server.root, "plugins/Old.jar"), "utf8"), "old jar");
    await ok("GET", `servers/readFile?serverId=${server.id}&path=plugins/Old.jar`);
    const current = sha256(Buffer.from("old jar"));
    assert.equal((await answer(await upload({ serverId: server.id, path: "plugins/Old.jar", expectedSha256: current }, Buffer.from("new")))).status, 200);
    assert.equal(readFileSync(join(server.root, "plugins/Old.jar"), "utf8"), "new");

    const { events } = await ok("GET", `activity/listOrganizationActivity?organizationSlug=acme&serverId=${server.id}&action=server.file_written`);
    assert.deepEqual((events as Json[]).map((e) => [e.details.path, e.details.size, e.details.via]).reverse(), [
      ["plugins/New.jar", String(jar.length), "upload"],
      ["plugins/Old.jar", "3", "upload"],
    ]);
  });

  it("an upload declared larger than the deployment takes, or into a folder the grant does not reach, writes nothing", async () => {
    const server = await wrapped("Upload limits", { "server.properties": "a=b\n", "plugins/Other.jar": "x" });
    await grant(server.id, ["files_write"], ["plugins"]);
    const member = setting.memberKey();
    const outside = await answer(await upload({ serverId: server.id, path: "server.properties" }, Buffer.from("x"), member));
    assert.deepEqual(refused(outside), [403, "permission_denied"]);
    const inside = await answer(await upload({ serverId: server.id, path: "plugins/Mine.jar" }, Buffer.from("jar"), member));
    assert.equal(inside.status, 200);
    assert.deepEqual(refused(await answer(await upload({ serverId: server.id, path: "../escape.jar" }, Buffer.from("x")))), [400, "outside_root"]);
    assert.ok(!existsSync(join(server.base, "escape.jar")));
    assert.equal(readFileSync(join(server.root, "server.properties"), "utf8"), "a=b\n");

    // Declared past FILE_TRANSFER_MAX_MB (1 GiB here): refused before a byte of it is read.
    const declared = await new Promise<{ status: number; body: Json }>((resolve, reject) => {
      const req = request(url("uploadFile", { serverId: server.id, path: "plugins/Huge.jar" }), {
        method: "PUT",
        headers: { "x-api-key": setting.ownerKey(), "content-length": String(2 * 1024 ** 3) },
      });
      req.on("response", (res) => {
        let text = "";
        res.on("data", (chunk: Buffer) => (text += chunk));
        res.on("end", () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
      });
      req.on("error", reject);
      req.write("x");
    });
    assert.deepEqual([declared.status, declared.body.code], [413, "payload_too_large"]);
    assert.ok(!existsSync(join(server.root, "plugins/Huge.jar")));
  });

  it("an upload whose caller goes away midway leaves the old file whole and no temporary file", async () => {
    const server = await wrapped("Abandoned", { "plugins/Kept.jar": "the old jar" });
    const leftovers = () => readdirSync(join(server.root, "plugins")).filter((name) => name !== "Kept.jar");
    const until = async (holds: () => boolean) => {
      for (let i = 0; i < 150 && !holds(); i++) await new Promise((resolve) => setTimeout(resolve, 20));
    };
    const req = request(url("uploadFile", { serverId: server.id, path: "plugins/Kept.jar" }), {
      method: "PUT",
      headers: { "x-api-key": setting.ownerKey(), "content-length": String(8 * 1024 * 1024) },
    });
    req.on("error", () => {});
    let answered: number | undefined;
    req.on("response", (res) => (answered = res.statusCode));
    req.write(Buffer.alloc(3 * 1024 * 1024, 7));
    // The agent is writing the first pieces into its temporary file when the caller goes away.
    await until(() => leftovers().length > 0);
    assert.equal(leftovers().length, 1, "the agent's temporary file, while the upload runs");
    req.destroy();
    await until(() => leftovers().length === 0);
    assert.deepEqual(leftovers(), [], "the agent dropped its temporary file");
    assert.equal(answered, undefined);
    assert.equal(readFileSync(join(server.root, "plugins/Kept.jar"), "utf8"), "the old jar");
    const after = await answer(await upload({ serverId: server.id, path: "plugins/Kept.jar" }, Buffer.from("new jar")));
    assert.equal(after.status, 200, JSON.stringify(after.body));
  });

  it("a download of a file that changes midway stops short instead of mixing versions", async () => {
    const big = Buffer.alloc(8 * 1024 * 1024, 1);
    const server = await wrapped("Changing", { "big.bin": big });
    const res = await download({ serverId: server.id, path: "big.bin" });
    const reader = res.body!.getReader();
    const first = await reader.read();
    assert.ok(first.value && first.value.length > 0);
    writeFileSync(join(server.root, "big.bin"), Buffer.alloc(8 * 1024 * 1024 + 1, 2));
    let received = first.value.length;
    const failed = await (async () => {
      try {
        for (let next = await reader.read(); !next.done; next = await reader.read()) received += next.value.length;
        return false;
      } catch {
        return true;
      }
    })();
    assert.ok(failed || received < big.length, `the download ended short (${received} of ${big.length} bytes)`);
    assert.equal(statSync(join(server.root, "big.bin")).size, big.length + 1);
  });
});
