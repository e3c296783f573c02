import assert from "node:assert/strict";
import http2 from "node:http2";
import zlib from "node:zlib";
import { create, toBinary, toJsonString } from "@bufbuild/protobuf";
import { Code, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { ConnectRequestSchema } from "../../gen/outpost/agent/v1/agent_service_pb.js";
import { OrganizationsService } from "../../gen/outpost/organizations/v1/organizations_service_pb.js";
import { ListServersRequestSchema } from "../../gen/outpost/servers/v1/servers_service_pb.js";
import { VerifierPolicy } from "../../gen/outpost/organizations/v1/resources_pb.js";
import { Game } from "../../gen/outpost/servers/v1/resources_pb.js";
import { apiKeyHeader } from "../../contract/credentials.ts";
import { agentMessageMaxBytes, maxPlayersPerMessage, messageMaxBytes } from "../../contract/request-limits.ts";
import { PlayerAuth, startAgent } from "../../agent/client.ts";
import { startTestOutpost, type TestOutpost } from "../support/outpost.ts";
import { seedGameOAuth, type Seeded } from "../support/game-oauth.ts";
import { rawRequest } from "../support/bombs.ts";
import { rejectsWith } from "../support/errors.ts";

const unaryPath = "/api/rpc/outpost.auth.v1.AuthService/GetSession";

/** A player at the contract's limits: a UUID, and a name of 32 characters of `char`. */
const player = (i: number, char: string) => ({ uuid: `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`, name: char.repeat(32) });

/**
 * The limits on request bodies: every legitimate request still fits, anything declared larger is
 * refused with a 413 before it is read (and the connection closes), GET takes no body, and a
 * compressed message that does not decompress is the caller's error.
 */
describe("request size: the limits fit the contract, and every listener refuses more", function () {
  this.timeout(60_000);
  let t: TestOutpost;
  let seeded: Seeded;

  before(async () => {
    t = await startTestOutpost();
    seeded = await seedGameOAuth(t.baseUrl, ["http://127.0.0.1:9/callback"]);
  });
  after(async () => {
    await t?.close();
  });

  it("the largest Players message fits the agent's limit, in binary and in JSON", () => {
    const players = create(ConnectRequestSchema, {
      message: { case: "players", value: { players: Array.from({ length: maxPlayersPerMessage }, (_, i) => player(i, "😀")) } },
    });
    const binary = toBinary(ConnectRequestSchema, players).length;
    const json = Buffer.byteLength(toJsonString(ConnectRequestSchema, players));
    assert.ok(binary > 800_000 && binary <= agentMessageMaxBytes, `binary ${binary}`);
    assert.ok(json > 900_000 && json <= agentMessageMaxBytes, `JSON ${json}`);
  });

  it("the real agent reports 5,000 players with long multi-byte names over h2c", async () => {
    const agent = startAgent({ url: t.baseUrl, key: seeded.agentKey, game: Game.MINECRAFT, playerAuth: PlayerAuth.ONLINE, reconnect: false });
    try {
      await agent.connected();
      agent.setPlayers(Array.from({ length: maxPlayersPerMessage }, (_, i) => player(i, "中")));
      for (let i = 0; i < 200 && t.outpost.runtime.agents.players(seeded.serverId)?.length !== maxPlayersPerMessage; i++) await new Promise((r) => setTimeout(r, 25));
      assert.equal(t.outpost.runtime.agents.players(seeded.serverId)?.length, maxPlayersPerMessage);
    } finally {
      await agent.stop();
    }
  });

  it("the largest unary request (a client with 16 redirect URIs of 2,048 characters, 100 servers) fits", async () => {
    const request = {
      organizationSlug: "acme",
      name: "Largest",
      redirectUris: Array.from({ length: 16 }, (_, i) => `https://app.example.com/${i}/`.padEnd(2048, "a")),
      verifierPolicy: VerifierPolicy.SELECTED_SERVERS,
      allowedServerIds: Array.from({ length: 100 }, (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`),
    };
    assert.ok(JSON.stringify(request).length > 34_000);
    for (const useBinaryFormat of [false, true]) {
      const transport = createConnectTransport({ baseUrl: `${t.baseUrl}/api/rpc`, httpVersion: "1.1", useBinaryFormat });
      const client = createClient(OrganizationsService, transport);
      // Read whole and judged by core: these servers are not the organization's.
      const error = await rejectsWith(client.createGameOAuthClient(request, { headers: { [apiKeyHeader]: seeded.apiKey } }), Code.InvalidArgument);
      assert.match(error.rawMessage, /server/i);
    }
    assert.ok(messageMaxBytes >= 64 * 1024);
  });

  it("refuses a declared body over the limit with 413 and closes the connection, on every surface", async () => {
    const declared = (path: string, bytes: number, headers: Record<string, string> = {}, port = t.outpost.port) =>
      rawRequest(port, "POST", path, { "content-length": String(bytes), ...headers });
    const cases: Array<[string, number, Record<string, string>, number, (body: Record<string, string>) => void]> = [
      [
        "/api/rpc/outpost.auth.v1.AuthService/GetSession",
        64 * 1024 + 6,
        { "content-type": "application/proto" },
        t.outpost.port,
        (b) => assert.equal(b.code, "resource_exhausted"),
      ],
      [
        "/api/rpc/outpost.agent.v1.AgentService/Connect",
        9 * 1024 * 1024,
        { "content-type": "application/connect+proto" },
        t.outpost.port,
        (b) => assert.equal(b.code, "resource_exhausted"),
      ],
      ["/api/http/organizations/createOrganization", 100_000, { "content-type": "application/json" }, t.outpost.port, (b) => assert.equal(b.code, "payload_too_large")],
      ["/sign-in", 100_000, { "content-type": "application/x-www-form-urlencoded" }, t.outpost.port, (b) => assert.equal(b.code, "payload_too_large")],
      [
        "/app/account/security/api-keys",
        100_000,
        { "content-type": "application/x-www-form-urlencoded" },
        t.outpost.port,
        (b) => assert.equal(b.code, "payload_too_large"),
      ],
      ["/api/auth/oauth2/token", 100_000, { "content-type": "application/x-www-form-urlencoded" }, t.outpost.port, (b) => assert.equal(b.code, "payload_too_large")],
      ["/oauth2/token", 20_000, { "content-type": "application/x-www-form-urlencoded" }, t.outpost.gamePort, (b) => assert.equal(b.error, "invalid_request")],
    ];
    for (const [path, bytes, headers, port, check] of cases) {
      // Only the head is sent: an answer at all means nothing waited for the body.
      const answer = await declared(path, bytes, headers, port);
      assert.equal(answer.status, 413, `${path}: ${answer.text}`);
      assert.equal(answer.headers.connection, "close", path);
      check(JSON.parse(answer.text) as Record<string, string>);
    }
  });

  it("refuses a sign-in or sign-up body over its own, smaller limit with 413, whether declared or streamed", async () => {
    const big = (type: string) =>
      type === "application/json"
        ? JSON.stringify({ email: "a@example.com", password: "x".repeat(20_000) })
        : new URLSearchParams({ email: "a@example.com", password: "x".repeat(20_000) }).toString();
    for (const path of ["/sign-in", "/sign-up"]) {
      for (const type of ["application/json", "application/x-www-form-urlencoded"]) {
        // 20 KB: under every listener's 64 KiB, over the 16 KiB these forms take.
        const declared = await fetch(t.baseUrl + path, { method: "POST", headers: { "content-type": type }, body: big(type) });
        const streamed = await fetch(t.baseUrl + path, {
          method: "POST",
          headers: { "content-type": type },
          body: new Blob([big(type)]).stream(),
          duplex: "half",
        } as RequestInit);
        for (const res of [declared, streamed]) {
          assert.equal(res.status, 413, `${path} ${type}`);
          assert.deepEqual(await res.json(), { code: "payload_too_large", status: 413, message: "the body is larger than 16384 bytes" });
        }
      }
    }
  });

  it("refuses an oversized declared body on HTTP/2 too", async () => {
    const session = http2.connect(t.baseUrl);
    try {
      const stream = session.request({ ":method": "POST", ":path": unaryPath, "content-type": "application/proto", "content-length": String(10_000_000) });
      const status = await new Promise<number>((resolve, reject) => stream.on("response", (h) => resolve(Number(h[":status"]))).on("error", reject));
      assert.equal(status, 413);
    } finally {
      session.destroy();
    }
  });

  it("GET takes no body: the hosted page's events, pages and queries refuse one", async () => {
    const withBody: Array<Record<string, string>> = [{ "content-length": "5" }, { "transfer-encoding": "chunked" }];
    for (const headers of withBody) {
      for (const [port, path] of [
        [t.outpost.gamePort, "/oauth2/authorize/events?session=x"],
        [t.outpost.port, "/api/http/servers/listServers?organizationSlug=acme"],
        [t.outpost.port, "/app"],
      ] as const) {
        const answer = await rawRequest(port, "GET", path, headers);
        assert.equal(answer.status, 413, `${path} ${JSON.stringify(headers)}: ${answer.text}`);
        assert.match(answer.text, /takes no body/);
      }
    }
    const plain = await rawRequest(t.outpost.port, "GET", "/healthz", { "content-length": "0" });
    assert.equal(plain.status, 200);
  });

  it("a compressed message that does not decompress is invalid_argument, never a 500 or a stack trace", async () => {
    const truncated = zlib.gzipSync(Buffer.from("not really a message")).subarray(0, 12);
    for (const encoding of ["gzip", "br"]) {
      const answer = await rawRequest(
        t.outpost.port,
        "POST",
        unaryPath,
        { "content-type": "application/proto", "connect-protocol-version": "1", "content-encoding": encoding },
        truncated,
      );
      assert.equal(answer.status, 400, answer.text);
      assert.equal((JSON.parse(answer.text) as { code: string }).code, "invalid_argument");
      assert.doesNotMatch(answer.text, /\n\s+at /);
    }
  });

  it("a binary message that does not parse is invalid_argument (400) before any credential is read, as a JSON one is", async () => {
    const path = "/api/rpc/outpost.servers.v1.ServersService/ListServers";
    const headers = { "content-type": "application/proto", "connect-protocol-version": "1" };
    const valid = Buffer.from(toBinary(ListServersRequestSchema, create(ListServersRequestSchema, { organizationSlug: "acme" })));
    const bodies: Array<[string, Buffer]> = [
      ["a length past the end (the review's bytes)", Buffer.from([0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f])],
      ["a truncated message", valid.subarray(0, 3)],
      ["garbage", Buffer.from([0xff, 0xff, 0xff, 0xff, 0x07, 0x00, 0x13])],
    ];
    const refused = (answer: { status: number; text: string }, what: string) => {
      assert.equal(answer.status, 400, `${what}: ${answer.text}`);
      const error = JSON.parse(answer.text) as { code: string; message: string };
      assert.equal(error.code, "invalid_argument", what);
      assert.match(error.message, /^cannot decode message outpost\.servers\.v1\.ListServersRequest from binary: /, what);
      assert.doesNotMatch(answer.text, /\n\s+at /);
    };
    for (const [what, body] of bodies) {
      refused(await rawRequest(t.outpost.port, "POST", path, headers, body), what);
      refused(await rawRequest(t.outpost.port, "POST", path, { ...headers, "content-encoding": "gzip" }, zlib.gzipSync(body)), `${what}, gzipped`);
      const query = new URLSearchParams({ connect: "v1", encoding: "proto", base64: "1", message: body.toString("base64url") });
      refused(await rawRequest(t.outpost.port, "GET", `${path}?${query}`, {}), `${what}, as a GET`);
    }
    // The same path as JSON that does not parse, and a well-formed message goes on to ask for a credential.
    const json = await rawRequest(
      t.outpost.port,
      "POST",
      path,
      { "content-type": "application/json", "connect-protocol-version": "1" },
      Buffer.from('{"organizationSlug": 1'),
    );
    assert.equal(json.status, 400, json.text);
    assert.equal((JSON.parse(json.text) as { code: string }).code, "invalid_argument");
    const unauthenticated = await rawRequest(t.outpost.port, "POST", path, headers, valid);
    assert.equal(unauthenticated.status, 401, unauthenticated.text);
  });
});
