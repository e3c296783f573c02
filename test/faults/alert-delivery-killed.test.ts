/**
 * An instance killed mid-delivery: two `outpost serve` processes on one PostgreSQL database. The
 * first claims an alert delivery and is sending it to a webhook receiver that does not answer when
 * it is killed with SIGKILL; the delivery's lease runs out and the other instance sends it again,
 * with the same webhook-id (the receiver's idempotency key), and it is recorded delivered. Nothing
 * is lost, and the row was never sent by two instances at once. Takes a lease (60 s) to run.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestDatabase, onPostgresServer, type TestDatabase } from "../support/database.ts";
import { runCli, startServe, type ServeProcess } from "../support/process.ts";
import { freePort } from "../support/outpost.ts";
import { startHttpReceiver, verifyStandardWebhook, type HttpReceiver } from "../support/receivers.ts";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

onPostgresServer(() =>
  describe("faults: the instance sending an alert is killed", function () {
    this.timeout(180_000);
    let database: TestDatabase;
    let receiver: HttpReceiver;
    const dataDirs: string[] = [];
    const processes: ServeProcess[] = [];
    let envs: Array<Record<string, string>>;

    before(async () => {
      database = await createTestDatabase();
      receiver = await startHttpReceiver("hang");
      const kek = randomBytes(32).toString("base64");
      envs = [];
      for (let i = 0; i < 2; i++) {
        const dataDir = mkdtempSync(join(tmpdir(), "outpost-alert-kill-"));
        dataDirs.push(dataDir);
        envs.push({
          DATABASE_URL: database.url,
          KEY_ENCRYPTION_KEY: kek,
          DATA_DIR: dataDir,
          PORT: String(await freePort()),
          GAME_PORT: String(await freePort()),
          ALLOW_LOCAL_OUTBOUND: "true",
        });
      }
    });
    after(async () => {
      for (const p of processes) await p.stop().catch(() => undefined);
      await receiver?.close();
      await database?.drop();
      for (const dir of dataDirs) rmSync(dir, { recursive: true, force: true });
    });

    it("is sent by the other instance after the lease, with the same webhook-id, and recorded delivered", async () => {
      // Only the first instance runs while the event happens: it is the one that claims the delivery.
      const first = await startServe(envs[0]!);
      processes.push(first);
      const user = await runCli(["user", "create", "--email", "owner@example.com", "--password", "a long password 1"], envs[0]!);
      assert.equal(user.code, 0, user.stderr);
      const issued = await runCli(["api-key", "create", "--email", "owner@example.com", "--name", "faults"], envs[0]!);
      assert.equal(issued.code, 0, issued.stderr);
      const key = issued.stdout.trim().split("\n").pop()!;
      const api = async (port: number, method: "GET" | "POST", path: string, body?: unknown): Promise<Json> => {
        const res = await fetch(`http://127.0.0.1:${port}/api/http/${path}`, {
          method,
          headers: { "x-api-key": key, ...(body !== undefined && { "content-type": "application/json" }) },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        const json = (await res.json()) as Json;
        assert.equal(res.status, 200, `${path}: ${JSON.stringify(json)}`);
        return json;
      };
      await api(first.port, "POST", "organizations/createOrganization", { name: "Acme", slug: "acme" });
      const hook = await api(first.port, "POST", "integrations/createIntegration", {
        organizationSlug: "acme",
        name: "Ops",
        webhook: { url: `${receiver.origin}/alerts` },
      });
      await api(first.port, "POST", "alerts/createAlertRule", {
        organizationSlug: "acme",
        spec: { name: "Servers", enabled: true, kinds: ["configuration"], integrationIds: [hook.integration.id] },
      });
      await api(first.port, "POST", "servers/createServer", { organizationSlug: "acme", name: "Survival", game: "minecraft" });

      const sent = () => receiver.received.filter((r) => r.body.includes("server.created"));
      for (let i = 0; i < 400 && sent().length === 0; i++) await sleep(50);
      assert.equal(sent().length, 1, "the first instance is sending it, and the receiver holds the request");

      const second = await startServe(envs[1]!);
      processes.push(second);
      first.child.kill("SIGKILL");
      await first.stop().catch(() => undefined);
      receiver.behaviour = { status: 204 };

      // The lease is a minute: the second instance sends it once the first one's claim runs out.
      let delivered: Json;
      for (let i = 0; i < 240 && !delivered; i++) {
        const listed = await api(second.port, "GET", "alerts/listAlertDeliveries?organizationSlug=acme&status=delivered");
        delivered = listed.deliveries.find((d: Json) => d.action === "server.created");
        if (!delivered) await sleep(500);
      }
      assert.ok(delivered, "delivered by the instance that lived");
      // The killed instance's attempt never came back, so it was never counted.
      assert.equal(delivered.attempts, 1);
      const requests = sent();
      assert.equal(requests.length, 2, "sent once by each instance, never twice at once");
      assert.deepEqual(
        requests.map((r) => r.headers["webhook-id"]),
        [delivered.id, delivered.id],
        "the same idempotency key both times",
      );
      assert.ok(verifyStandardWebhook(hook.secret, requests[1]!.headers, requests[1]!.body));
    });
  }),
);
