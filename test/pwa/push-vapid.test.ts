/**
 * The VAPID key Web Push is signed with: one public key for everyone, made once per deployment
 * even when instances need it at once, kept across instances, restarts and a KEK rotation, and
 * stored only sealed. Subscriptions and delivery: push.test.ts.
 */
import assert from "node:assert/strict";
import { createECDH, randomBytes } from "node:crypto";
import { Code } from "@connectrpc/connect";
import { PwaService } from "../../gen/outpost/pwa/v1/pwa_service_pb.js";
import { startTestCore, testKeyEncryptionKey, type TestCore } from "../support/core.ts";
import { rotateKeyEncryptionKey } from "../../core/keys/kek-rotation.ts";
import { rejectsWith } from "../support/errors.ts";
import type { PushEndpoint } from "../support/push-endpoint.ts";
import { createVapidKeys } from "../../core/pwa/vapid-keys.ts";
import { insertVapidKeyIfNone } from "../../core/pwa/push-queries.ts";
import { seal } from "../../core/keys/key-encryption.ts";
import { keyEncryptionKey } from "../../core/keys/key-encryption.ts";
import { config, local, startPushFixture, subject } from "./push-fixture.ts";

describe("pwa: the VAPID key", function () {
  this.timeout(60_000);
  let t: TestCore;
  let push: PushEndpoint;
  let alice: { token: string; userId: string };
  let bob: { token: string; userId: string };
  const pwa = (who: { token: string }) => t.client(PwaService, { session: who.token });
  const sql = (text: string, params: unknown[] = []) => t.orm.em.fork().getConnection().execute(text, params);

  before(async () => {
    ({ t, push, alice, bob } = await startPushFixture());
  });
  after(async () => {
    await t?.close();
    await push?.close();
  });
  afterEach(() => assert.deepEqual(push.problems, []));

  it("gives one VAPID public key, a P-256 point, and signs with it", async () => {
    const { vapidPublicKey } = await pwa(alice).getPushConfig({});
    const point = Buffer.from(vapidPublicKey, "base64url");
    assert.equal(point.length, 65);
    assert.equal(point[0], 4);
    assert.equal((await pwa(bob).getPushConfig({})).vapidPublicKey, vapidPublicKey);
    await rejectsWith(t.client(PwaService).getPushConfig({}), Code.Unauthenticated);
  });

  it("keeps the VAPID key across instances and restarts, sealed under the KEK, never in plaintext", async () => {
    const { vapidPublicKey } = await pwa(alice).getPushConfig({});
    const other = await startTestCore(config, { ...local, database: t.database });
    try {
      assert.equal((await other.client(PwaService, { session: alice.token }).getPushConfig({})).vapidPublicKey, vapidPublicKey);
    } finally {
      await other.close();
    }
    const pair = await t.deps.push.vapid.get(t.deps.statements.on(t.orm.em.fork()), new Date());
    const privateKey = Buffer.from(pair.privateKey, "base64url");
    const rows = await sql("select * from vapid_keys");
    assert.equal(rows.length, 1);
    for (const value of Object.values(rows[0] as Record<string, unknown>)) {
      const bytes = Buffer.isBuffer(value) ? value : Buffer.from(String(value));
      assert.equal(bytes.includes(privateKey), false, "no column holds the private key");
      assert.equal(bytes.includes(Buffer.from(pair.privateKey)), false, "nor its base64url text");
    }
    // Another KEK cannot open it.
    const wrong = createVapidKeys(() => keyEncryptionKey(randomBytes(32)));
    await assert.rejects(wrong.get(t.deps.statements.on(t.orm.em.fork()), new Date()), /key-encryption key/);
  });

  it("keeps the VAPID key through a KEK rotation, sealed under the new KEK", async () => {
    const fresh = await startTestCore(config, local);
    const newKek = randomBytes(32);
    let after: TestCore | undefined;
    try {
      const before = await fresh.deps.push.vapid.get(fresh.deps.statements.on(fresh.orm.em.fork()), new Date());
      const rotation = await rotateKeyEncryptionKey(fresh.orm, keyEncryptionKey(testKeyEncryptionKey), keyEncryptionKey(newKek));
      assert.ok(rotation.resealed >= 1);
      after = await startTestCore(config, { ...local, database: fresh.database, keyEncryptionKey: newKek });
      assert.deepEqual(await after.deps.push.vapid.get(after.deps.statements.on(after.orm.em.fork()), new Date()), before);
      const [row] = await after.orm.em.fork().getConnection().execute("select kek_id from vapid_keys");
      assert.equal(row.kek_id, keyEncryptionKey(newKek).id);
    } finally {
      await after?.close();
      await fresh.close();
    }
  });

  it("signs with a stored key whose private scalar has a leading zero byte (node:crypto gives such a scalar as 31 bytes)", async () => {
    // About one P-256 key in 256 has such a scalar; web-push refuses it unless it is 32 bytes.
    let ecdh = createECDH("prime256v1");
    while (ecdh.generateKeys() && ecdh.getPrivateKey().length === 32) ecdh = createECDH("prime256v1");
    const fresh = await startTestCore(config, { ...local, vapidSubject: subject });
    try {
      const kek = keyEncryptionKey(testKeyEncryptionKey);
      const sealed = seal(kek, ecdh.getPrivateKey(), "vapid");
      await insertVapidKeyIfNone(
        fresh.deps.statements.on(fresh.orm.em.fork()),
        {
          public_key: ecdh.getPublicKey().toString("base64url"),
          private_key_ciphertext: sealed.ciphertext,
          private_key_iv: sealed.iv,
          private_key_tag: sealed.tag,
          kek_id: sealed.kekId,
        },
        new Date(),
      );
      const carol = await fresh.signUp("carol@example.com");
      const s = push.subscription();
      await fresh.client(PwaService, { session: carol.token }).subscribe({ endpoint: s.endpoint, keys: s.keys.json });
      const { outcomes } = await fresh.client(PwaService, { session: carol.token }).sendTestPush({});
      assert.deepEqual(
        outcomes.map((o) => [o.delivered, o.status, o.error]),
        [[true, 201, ""]],
      );
      assert.equal(push.received.at(-1)!.vapid.key, ecdh.getPublicKey().toString("base64url"));
      const pair = await fresh.deps.push.vapid.get(fresh.deps.statements.on(fresh.orm.em.fork()), new Date());
      assert.equal(Buffer.from(pair.privateKey, "base64url").length, 32);
    } finally {
      await fresh.close();
    }
  });

  it("makes one key when instances need it at once on a new deployment", async () => {
    const fresh = await startTestCore(config, local);
    const second = await startTestCore(config, { ...local, database: fresh.database });
    try {
      const [a, b] = await Promise.all([fresh, second].map((core) => core.deps.push.vapid.get(core.deps.statements.on(core.orm.em.fork()), new Date())));
      assert.equal(a.publicKey, b.publicKey);
      assert.equal((await fresh.orm.em.fork().getConnection().execute("select count(*)::int as n from vapid_keys"))[0].n, 1);
    } finally {
      await second.close();
      await fresh.close();
    }
  });
});
