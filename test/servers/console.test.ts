import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { Code, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { createWritableIterable } from "@connectrpc/connect/protocol";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { AgentService, type ConnectRequestSchema, type ConnectResponse } from "../../gen/outpost/agent/v1/agent_service_pb.js";
import { agentKeyHeader } from "../../contract/credentials.ts";
import { answerBudgetBytes } from "../../core/agents/console-lines.ts";
import { consoleCommandText } from "../../core/servers/console-methods.ts";
import type { DomainError } from "../../core/errors.ts";
import { rejectsWith } from "../support/errors.ts";
import { allActionNames } from "../support/grants.ts";
import { Game, PlayerAuth } from "../../gen/outpost/servers/v1/resources_pb.js";
import { useConsoleSetting } from "./console-fixture.ts";

/**
 * servers/executeConsoleCommand through the HTTP API, as a script (API key) and the dashboard
 * (session cookie) call it, against a whole Outpost and the real agent library over h2c: the
 * command reaches the agent's console handler and its output comes back; every refusal answers
 * at once with its status; every call the caller may make is an activity event.
 */
describe("servers: console commands", function () {
  this.timeout(60_000);
  const setting = useConsoleSetting();
  const { call, api, execute, createServer, connect, echo, consoleEvents } = setting;

  it("runs a command on the agent's console and returns its output, with an API key and with the dashboard session", async () => {
    const server = await createServer("Survival");
    const ran: string[] = [];
    await connect(server.key, { console: async (command) => (ran.push(command), echo!(command, new AbortController().signal)) });
    assert.equal((await api("GET", `servers/getServer?serverId=${server.id}`)).server.consoleAvailable, true);

    const byKey = await execute(server.id, "/say hello");
    assert.equal(byKey.status, 200, JSON.stringify(byKey.body));
    assert.match(byKey.body.requestId, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.deepEqual({ ...byKey.body, requestId: undefined }, { requestId: undefined, success: true, output: ["> say hello", "done"], error: "" });

    const bySession = await execute(server.id, "//help", { cookie: setting.cookie() });
    assert.equal(bySession.status, 200, JSON.stringify(bySession.body));
    assert.deepEqual(bySession.body.output, ["> /help", "done"]);
    assert.deepEqual(ran, ["say hello", "/help"], "one leading slash is dropped");

    const record = (await api("GET", `servers/getConsoleCommand?serverId=${server.id}&requestId=${byKey.body.requestId}`)).command;
    assert.deepEqual(
      { ...record, sentAt: typeof record.sentAt, settledAt: typeof record.settledAt, userId: typeof record.userId },
      {
        requestId: byKey.body.requestId,
        command: "say hello",
        status: "ran",
        output: ["> say hello", "done"],
        error: "",
        userId: "string",
        sentAt: "string",
        settledAt: "string",
      },
    );
    const elsewhere = await createServer("Elsewhere");
    const notHere = await call("GET", `servers/getConsoleCommand?serverId=${elsewhere.id}&requestId=${byKey.body.requestId}`, undefined, { key: setting.apiKey() });
    assert.deepEqual([notHere.status, notHere.body.reason], [404, "not_found"], "a command is found only under its own server");
    const outsider = await call("GET", `servers/getConsoleCommand?serverId=${server.id}&requestId=${byKey.body.requestId}`, undefined, { key: setting.outsiderKey() });
    assert.equal(outsider.status, 404);

    const events = await consoleEvents(server.id);
    assert.deepEqual(
      events.map((e) => [e.actor.email, e.details.command, e.details.outcome, e.details.requestId]),
      [
        ["owner@example.com", "say hello", "ok", byKey.body.requestId],
        ["owner@example.com", "/help", "ok", bySession.body.requestId],
      ],
    );
  });

  it("passes on what the agent could not run, and records it as failed", async () => {
    const server = await createServer("Failing");
    await connect(server.key, { console: async () => ({ success: false, output: [], error: "the server is stopping" }) });
    const res = await execute(server.id, "list");
    assert.equal(res.status, 200);
    assert.deepEqual([res.body.success, res.body.output, res.body.error], [false, [], "the server is stopping"]);
    const [event] = await consoleEvents(server.id);
    assert.deepEqual([event.details.outcome, event.details.error], ["failed", "the server is stopping"]);
    const record = (await api("GET", `servers/getConsoleCommand?serverId=${server.id}&requestId=${res.body.requestId}`)).command;
    assert.deepEqual([record.status, record.error], ["failed", "the server is stopping"]);
  });

  it("answers 409 when the agent is offline or has no console, and records both", async () => {
    const server = await createServer("Quiet");
    const offline = await execute(server.id, "list");
    assert.equal(offline.status, 409);
    assert.deepEqual([offline.body.code, offline.body.reason, offline.body.message], ["failed_precondition", "agent_offline", "the server's agent is offline"]);

    await connect(server.key);
    assert.equal((await api("GET", `servers/getServer?serverId=${server.id}`)).server.consoleAvailable, false);
    const noConsole = await execute(server.id, "list");
    assert.equal(noConsole.status, 409);
    assert.equal(noConsole.body.reason, "no_console");
    assert.match(noConsole.body.message, /cannot run console commands/);
    assert.deepEqual(
      (await consoleEvents(server.id)).map((e) => e.details.outcome),
      ["offline", "no_console"],
    );
  });

  it("refuses a command over 1,000 characters, with a control character, a line separator or a bidirectional control, or empty, with 400", async () => {
    const server = await createServer("Strict");
    const ran: string[] = [];
    await connect(server.key, { console: async (command) => (ran.push(command), echo!(command, new AbortController().signal)) });
    assert.equal((await execute(server.id, "x".repeat(1000))).status, 200, "1,000 characters is fine");
    assert.equal((await execute(server.id, "say héllo wörld ✓ 👍")).status, 200, "any printable text is fine");
    const controls = [
      "say one\nop me",
      "say one\r",
      "say \u001b[2J",
      "say a\u2028op me",
      "say a\u2029b",
      "say a\u0085b",
      "say\ttab",
      "say \u0000",
      "say \u007f",
      "say \u009b2J",
    ];
    const bidi = ["say \u202eevil", "say a\u202ab", "say \u2066op\u2069", "say a\u200fb", "say a\u061cb"];
    for (const command of ["x".repeat(1001), ...controls, ...bidi, "", "   ", "/", "/  "]) {
      const res = await execute(server.id, command);
      assert.equal(res.status, 400, JSON.stringify(command));
      assert.equal(res.body.code, "invalid_argument");
    }
    // What the caller reads is words naming the field, never the rule's regular expression.
    const newline = await execute(server.id, "say one\nop me");
    assert.equal(newline.body.message, "command: must be one line, without control characters or bidirectional text controls");
    assert.deepEqual(newline.body.details, [
      { field: "command", message: "must be one line, without control characters or bidirectional text controls", rule: "string.one_line" },
    ]);
    assert.equal((await execute(server.id, "   ")).body.message, "command: must hold something besides spaces");
    assert.deepEqual(
      (await consoleEvents(server.id)).map((e) => e.details.outcome),
      ["ok", "ok"],
      "bad input is no console command",
    );
    assert.deepEqual(ran, ["x".repeat(1000), "say héllo wörld ✓ 👍"]);
    for (const command of [...controls, ...bidi]) {
      assert.throws(
        () => consoleCommandText(command),
        (error: DomainError) => error.reason === "invalid_argument",
        "core refuses it too, behind the contract",
      );
    }
  });

  it("cuts a long output to its newest lines and says how many were cut", async () => {
    const server = await createServer("Verbose");
    const lines = Array.from({ length: 200 }, (_, i) => `line ${i} `.padEnd(100, "."));
    await connect(server.key, { console: async () => ({ success: true, output: lines }) });
    const res = await execute(server.id, "help");
    assert.equal(res.status, 200);
    const output = res.body.output as string[];
    const [note, ...kept] = output;
    assert.equal(note, `[Outpost: ${200 - kept.length} earlier lines cut to fit]`);
    assert.deepEqual(kept, lines.slice(-kept.length), "the newest lines, in order");
    assert.ok(kept.length > 40, `${kept.length} lines kept`);
    assert.ok(Buffer.byteLength(JSON.stringify(output)) <= answerBudgetBytes);
  });

  it("is for those who see the server: a member without a grant gets 403 (and an event), an outsider 404 (and none), a granted member runs it", async () => {
    const server = await createServer("Granted");
    await connect(server.key, { console: echo });
    const denied = await execute(server.id, "list", { key: setting.memberKey() });
    assert.deepEqual([denied.status, denied.body.reason], [403, "permission_denied"]);
    const getServer = await call("GET", `servers/getServer?serverId=${server.id}`, undefined, { key: setting.memberKey() });
    assert.equal(getServer.status, 403, "as getServer answers");
    const outside = await execute(server.id, "list", { key: setting.outsiderKey() });
    assert.deepEqual([outside.status, outside.body.reason], [404, "not_found"]);
    assert.equal((await execute(randomUUID(), "list")).status, 404);
    const attempts = await consoleEvents(server.id);
    assert.deepEqual(
      attempts.map((e) => [e.actor.email, e.details.command, e.details.outcome, e.details.error]),
      [["member@example.com", "list", "denied", "you have no access to this server; ask an owner or admin for a grant"]],
      "the member's attempt is on record; the outsider, for whom the server does not exist, left none",
    );

    await api("POST", "organizations/createAccessGrant", { organizationSlug: "acme", userId: setting.memberId(), serverId: server.id, actions: allActionNames });
    const granted = await execute(server.id, "list", { key: setting.memberKey() });
    assert.equal(granted.status, 200);
    const [, event] = await consoleEvents(server.id);
    assert.deepEqual([event.actor.email, event.details.outcome], ["member@example.com", "ok"]);
  });

  it("the stream ignores a result for no command it sent, and ends on one the contract refuses", async () => {
    const server = await createServer("Raw");
    const client = createClient(AgentService, createConnectTransport({ baseUrl: `${setting.t().baseUrl}/api/rpc`, httpVersion: "2" }));
    const requests = createWritableIterable<MessageInitShape<typeof ConnectRequestSchema>>();
    const responses = client.connect(requests, { headers: { [agentKeyHeader]: server.key } })[Symbol.asyncIterator]();
    const next = async (): Promise<ConnectResponse> => (await responses.next()).value;
    await requests.write({ message: { case: "hello", value: { game: Game.MINECRAFT, playerAuth: PlayerAuth.ONLINE, console: true } } });
    assert.equal((await next()).message.case, "welcome");
    await requests.write({ message: { case: "consoleResult", value: { requestId: "never-sent", success: true, output: ["?"] } } });
    await requests.write({ message: { case: "heartbeat", value: {} } });
    assert.equal((await next()).message.case, "ping", "still connected");
    await requests.write({ message: { case: "consoleResult", value: { requestId: "x", output: Array.from({ length: 201 }, () => "") } } });
    const error = await rejectsWith(next(), Code.InvalidArgument);
    assert.match(error.rawMessage, /output/);
    requests.close();
    for (let i = 0; i < 50 && (await api("GET", `servers/getServer?serverId=${server.id}`)).server.online; i++) await sleep(20);
    assert.equal((await api("GET", `servers/getServer?serverId=${server.id}`)).server.online, false);
  });
});
