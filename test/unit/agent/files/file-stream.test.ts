import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { createRouterTransport, type Transport } from "@connectrpc/connect";
import { AgentService, ConnectRequestSchema, type FileRequestSchema, type FileResult, type Hello } from "../../../../gen/outpost/agent/v1/agent_service_pb.js";
import { FilesMode, Game, PlayerAuth } from "../../../../gen/outpost/servers/v1/resources_pb.js";
import { startAgent, type AgentEvent, type AgentFilesOptions } from "../../../../agent/client.ts";
import { createContractValidator } from "../../../../contract/validation.ts";
import { useFilesFixture } from "./files-fixture.ts";

describe("agent files: FileRequests over the agent's stream", () => {
  const files = useFilesFixture();
  const validator = createContractValidator();

  /**
   * Outpost, as far as files go: it welcomes the agent, sends `fileRequests` one by one, and keeps
   * the Hello and every FileResult, each checked against the contract.
   */
  function fakeOutpost(fileRequests: Array<MessageInitShape<typeof FileRequestSchema>>) {
    const seen = { hello: undefined as Hello | undefined, results: [] as FileResult[], refused: [] as string[] };
    let answered!: () => void;
    const allAnswered = new Promise<void>((resolve) => (answered = resolve));
    const transport = createRouterTransport(({ service }) => {
      service(AgentService, {
        async *connect(requests) {
          for await (const request of requests) {
            const verdict = validator.validate(ConnectRequestSchema, request);
            if (verdict.kind !== "valid") seen.refused.push(`${request.message.case}: ${verdict.error?.message}`);
            const { message } = request;
            if (message.case === "hello") {
              seen.hello = message.value;
              yield { message: { case: "welcome", value: { serverId: "s1", serverName: "Survival", organizationSlug: "acme", heartbeatSeconds: 30 } } };
              for (const fileRequest of fileRequests) yield { message: { case: "fileRequest", value: fileRequest } };
            } else if (message.case === "fileResult") {
              seen.results.push(message.value);
              if (seen.results.length === fileRequests.length) answered();
            }
          }
        },
      });
    });
    return { transport, seen, allAnswered };
  }

  const agentWith = (transport: Transport, files?: AgentFilesOptions, onEvent?: (event: AgentEvent) => void) =>
    startAgent({ url: "http://outpost.test", key: "opa_test", game: Game.MINECRAFT, playerAuth: PlayerAuth.ONLINE, transport, files }, onEvent);

  it("says its files mode in Hello and answers each FileRequest with its FileResult on the stream", async () => {
    files.put("server.properties", "motd=A\n");
    files.put("secrets/token", "hidden");
    const outpost = fakeOutpost([
      { requestId: "list-1", timeoutMs: 10_000, operation: { case: "list", value: { path: "" } } },
      { requestId: "read-1", timeoutMs: 10_000, operation: { case: "read", value: { path: "server.properties" } } },
      { requestId: "write-1", timeoutMs: 10_000, operation: { case: "write", value: { path: "server.properties", content: Buffer.from("motd=B\n") } } },
    ]);
    const agent = agentWith(outpost.transport, { root: files.root, mode: "read-only", deny: ["secrets/**"] });
    try {
      await outpost.allAnswered;
      assert.deepEqual(outpost.seen.refused, [], "everything the agent sent is within the contract");
      assert.equal(outpost.seen.hello?.files, FilesMode.READ_ONLY);
      const byId = new Map(outpost.seen.results.map((result) => [result.requestId, result.result]));
      const listing = byId.get("list-1");
      assert.equal(listing?.case, "listing");
      assert.deepEqual(
        listing.value.entries.map((entry) => entry.name),
        ["server.properties"],
        "the deny list hides secrets/",
      );
      const content = byId.get("read-1");
      assert.equal(content?.case, "content");
      assert.equal(Buffer.from(content.value.content).toString(), "motd=A\n");
      const write = byId.get("write-1");
      assert.equal(write?.case, "failure");
      assert.equal(write.value.reason, "read_only");
      assert.equal(readFileSync(join(files.root, "server.properties"), "utf8"), "motd=A\n");
    } finally {
      await agent.stop();
    }
  });

  it("says files off in Hello without files, or with a root that does not open (telling the operator why)", async () => {
    const without = fakeOutpost([{ requestId: "r1", timeoutMs: 10_000, operation: { case: "list", value: { path: "" } } }]);
    const plain = agentWith(without.transport);
    try {
      await without.allAnswered;
      assert.equal(without.seen.hello?.files, FilesMode.OFF);
      assert.equal((without.seen.results[0].result.value as { reason: string }).reason, "files_off");
    } finally {
      await plain.stop();
    }

    const events: AgentEvent[] = [];
    const missing = fakeOutpost([]);
    const broken = agentWith(missing.transport, { root: join(files.base, "gone") }, (event) => void events.push(event));
    try {
      await broken.connected();
      assert.equal(missing.seen.hello?.files, FilesMode.OFF);
      const fileError = events.find((event) => event.kind === "fileError");
      assert.match(fileError?.kind === "fileError" ? fileError.error.message : "(none)", /files are off: the files root .*gone cannot be served/);
    } finally {
      await broken.stop();
    }
  });
});
