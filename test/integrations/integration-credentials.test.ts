import assert from "node:assert/strict";
import { Code, ConnectError } from "@connectrpc/connect";
import { IntegrationsService } from "../../gen/outpost/integrations/v1/integrations_service_pb.js";
import { randomBytes } from "node:crypto";
import { startTestCore, testConfig, testKeyEncryptionKey, type TestCore } from "../support/core.ts";
import { rotateKeyEncryptionKey } from "../../core/keys/kek-rotation.ts";
import { Migration0025Hardening } from "../../core/db/migrations/0025-hardening.ts";
import { keyEncryptionKey } from "../../core/keys/key-encryption.ts";
import { acmeWithMembers, type AcmeCast, type Account } from "../support/fixtures.ts";
import { startHttpReceiver, verifyStandardWebhook, type HttpReceiver } from "../support/receivers.ts";

/**
 * What integrations keep and how often they may be tried: credentials sealed under the KEK (and
 * re-sealed by its rotation), URLs that migration 0025 redacted, and the cap on a person's test
 * sends. Deliveries themselves: integrations.test.ts and integration-targets.test.ts.
 */
describe("integrations: stored credentials and test sends", () => {
  let t: TestCore;
  let cast: AcmeCast;
  let receiver: HttpReceiver;
  const api = (who: Account, core = t) => core.client(IntegrationsService, { session: who.token });
  const acme = { organizationSlug: "acme" };

  before(async () => {
    receiver = await startHttpReceiver();
    t = await startTestCore(testConfig, { outbound: { allowLocal: true, timeoutMs: 1000 } });
    cast = await acmeWithMembers(t);
  });
  after(async () => {
    await t?.close();
    await receiver?.close();
  });
  beforeEach(() => {
    receiver.received.length = 0;
    receiver.behaviour = { status: 204 };
  });

  describe("migration 0025", () => {
    it("redacts the full webhook URLs that earlier versions kept in display_url and in activity details", async () => {
      const { integration } = await api(cast.owner).createIntegration({
        ...acme,
        name: "Old hook",
        target: { case: "webhook", value: { url: `${receiver.origin}/old` } },
      });
      const full = `${receiver.origin}/hooks/T0ken-old?sig=abc`;
      const connection = t.orm.em.fork().getConnection();
      await connection.execute(`update integrations set display_url = ? where id = ?`, [full, integration!.id]);
      await connection.execute(`update activity_events set details = jsonb_set(details, '{url}', to_jsonb(?::text)) where target_id = ?`, [full, integration!.id]);
      const migration = new Migration0025Hardening(t.orm.em.getDriver(), t.orm.config);
      await migration.up();
      const [row] = await connection.execute(`select display_url from integrations where id = ?`, [integration!.id]);
      const events = await connection.execute(`select details->>'url' as url from activity_events where target_id = ?`, [integration!.id]);
      assert.equal(row.display_url, `${receiver.origin}/…-old`);
      assert.deepEqual(
        events.map((e) => e.url),
        [`${receiver.origin}/…-old`],
      );
    });
  });

  describe("key-encryption key rotation", () => {
    it("re-seals integrations' credentials: an instance with the new KEK still signs with the same secret", async () => {
      const { integration, secret } = await api(cast.owner).createIntegration({
        ...acme,
        name: "Survives",
        target: { case: "webhook", value: { url: `${receiver.origin}/kek` } },
      });
      const next = randomBytes(32);
      const rotation = await rotateKeyEncryptionKey(t.orm, keyEncryptionKey(testKeyEncryptionKey), keyEncryptionKey(next));
      assert.ok(rotation.resealed >= 1);
      const rotated = await startTestCore(testConfig, { database: t.database, keyEncryptionKey: next, outbound: { allowLocal: true } });
      try {
        const outcome = await api(cast.owner, rotated).testIntegration({ ...acme, integrationId: integration!.id });
        assert.equal(outcome.ok, true, outcome.error);
        assert.ok(verifyStandardWebhook(secret, receiver.received[0].headers, receiver.received[0].body));
        // An instance still on the old KEK cannot open them: a failed delivery that says why, not a 500.
        const stale = await api(cast.owner).testIntegration({ ...acme, integrationId: integration!.id });
        assert.equal(stale.ok, false);
        assert.match(stale.error, /encrypted with key-encryption key .*, but KEY_ENCRYPTION_KEY is/);
      } finally {
        await rotated.close();
      }
    });
  });

  describe("test sends", () => {
    it("refuses a person's test sends past 20 in ten minutes (rate_limited with a retry time), and sends nothing for them", async () => {
      const { integration } = await api(cast.admin).createIntegration({
        ...acme,
        name: "Limit hook",
        target: { case: "webhook", value: { url: `${receiver.origin}/hooks/limit` } },
      });
      let sent = 0;
      let refusal: ConnectError | undefined;
      for (let i = 0; i < 25 && !refusal; i++) {
        try {
          await api(cast.admin).testIntegration({ ...acme, integrationId: integration!.id });
          sent++;
        } catch (error) {
          refusal = ConnectError.from(error);
        }
      }
      assert.equal(refusal?.code, Code.ResourceExhausted, refusal?.message);
      assert.match(refusal!.rawMessage, /too many test sends/);
      assert.ok(sent >= 1 && sent <= 20, `${sent} sent before the refusal`);
      assert.equal(receiver.received.length, sent, "the refused test reached no one");
    });
  });
});
