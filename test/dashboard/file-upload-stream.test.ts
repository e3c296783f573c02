import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import type { AddressInfo } from "node:net";
import http from "node:http";
import Koa from "koa";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createRouterTransport } from "@connectrpc/connect";
import { AuthService, GetSessionResponseSchema } from "../../gen/outpost/auth/v1/auth_service_pb.js";
import { NotificationsService } from "../../gen/outpost/notifications/v1/notifications_service_pb.js";
import { OrganizationsService } from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { Role } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { FilesMode, Game } from "../../gen/outpost/servers/v1/resources_pb.js";
import { ServersService, type UploadFileRequest } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { createDashboard } from "../../edge/dashboard/index.ts";

const serverId = "7b0a7c0e-4d4e-4f55-8d1c-3f6f2f0e9a11";
const formToken = "t".repeat(43);
const cookie = `outpost_session=session; outpost_form=${formToken}`;

/**
 * The upload form's route against a stand-in core whose servers/uploadFile records what it is sent
 * (the real one comes with another branch of issue 29; files.test.ts and files-browser.test.ts
 * take the same form end to end once it is there): the file goes as the header, then its bytes in
 * order in pieces of at most 1 MiB, as the browser's body arrives; and a refusal after the header
 * is a page, with the rest of the body read to its end so that the browser gets it.
 */
describe("dashboard: the upload form streams into servers/uploadFile", function () {
  this.timeout(60_000);
  let server: http.Server;
  let base: string;
  let received: UploadFileRequest[][] = [];
  let refuseAfterHeader = false;

  before(async () => {
    const transport = createRouterTransport(({ service }) => {
      service(AuthService, { getSession: () => create(GetSessionResponseSchema, { user: { id: "u", email: "olive@example.com", name: "Olive" } }) });
      service(OrganizationsService, { listOrganizations: () => ({ organizations: [{ id: "o", slug: "acme", name: "Acme", role: Role.OWNER }] }) });
      service(NotificationsService, { getUnreadCount: () => ({ unread: 0 }) });
      service(ServersService, {
        getServer: () => ({ server: { id: serverId, name: "Survival", game: Game.MINECRAFT, online: true, files: FilesMode.ON } }),
        listFiles: (req) => ({ path: req.path, entries: [], nextCursor: "" }),
        async uploadFile(requests) {
          const messages: UploadFileRequest[] = [];
          received.push(messages);
          for await (const message of requests) {
            messages.push(message);
            if (refuseAfterHeader) throw new ConnectError('your access grant to this server does not reach "plugins/x.jar"', Code.PermissionDenied);
          }
          const header = messages[0].part.value as { path: string };
          return { path: header.path, size: 0n, sha256: "" };
        },
      });
    });
    const app = new Koa();
    app.use(createDashboard({ transport, accountBaseUrl: new URL("http://127.0.0.1") }));
    server = http.createServer(app.callback());
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/app/o/acme/servers/${serverId}/files`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const post = (folder: string, name: string, content: Buffer) => {
    const form = new FormData();
    form.set("form_token", formToken);
    form.set("path", folder);
    form.set("file", new Blob([content]), name);
    return fetch(`${base}/upload`, { method: "POST", body: form, headers: { cookie }, redirect: "manual" });
  };

  it("sends the header, then the bytes in order in pieces of at most 1 MiB", async () => {
    received = [];
    const content = randomBytes(3 * 1024 * 1024 + 123);
    const res = await post("plugins", "Big.jar", content);
    assert.equal(res.status, 303);
    assert.equal(res.headers.get("location"), `/app/o/acme/servers/${serverId}/files?path=plugins&notice=file-uploaded`);
    const [messages] = received;
    assert.equal(messages[0].part.case, "header");
    assert.deepEqual(messages[0].part.value, { ...messages[0].part.value, serverId, path: "plugins/Big.jar" });
    const data = messages.slice(1).map((m) => {
      assert.equal(m.part.case, "data");
      return m.part.value as Uint8Array;
    });
    assert.ok(data.every((piece) => piece.length <= 1024 * 1024 && piece.length > 0));
    assert.equal(data.length, 4, "as few pieces as 1 MiB allows");
    assert.equal(createHash("sha256").update(Buffer.concat(data)).digest("hex"), createHash("sha256").update(content).digest("hex"));
  });

  it("shows core's refusal on the page, having read the rest of the body", async () => {
    received = [];
    refuseAfterHeader = true;
    try {
      const res = await post("plugins", "x.jar", randomBytes(4 * 1024 * 1024));
      assert.equal(res.status, 403);
      assert.match(await res.text(), /Your access grant to this server does not reach &quot;plugins\/x.jar&quot;\./);
      assert.equal(received[0].length, 1, "nothing after the header went to core");
    } finally {
      refuseAfterHeader = false;
    }
  });

  it("takes a file name with a path as its last part, and refuses a form without a file name", async () => {
    received = [];
    assert.equal((await post("", "C:\\Users\\me\\ops.json", Buffer.from("{}"))).status, 303);
    assert.equal((received[0][0].part.value as { path: string }).path, "ops.json");
    const res = await post("", "", Buffer.from("x"));
    assert.equal(res.status, 400);
    assert.match(await res.text(), /Choose a file to upload\./);
  });
});
