import assert from "node:assert/strict";
import { createPrivateKey, createPublicKey, randomBytes } from "node:crypto";
import { Code, createClient, createRouterTransport } from "@connectrpc/connect";
import { toJson } from "@bufbuild/protobuf";
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, type JSONWebKeySet } from "jose";
import { pino } from "pino";
import { GetJwksResponseSchema, Issuer, KeysService } from "../../gen/outpost/keys/v1/keys_service_pb.js";
import { createSigningKeys, type Issuer as IssuerName, type Jwks, type SigningAlg } from "../../core/keys/signing-keys.ts";
import { keyEncryptionKey, KeyEncryptionError, open } from "../../core/keys/key-encryption.ts";
import { sealLabel } from "../../core/keys/signing-key-store.ts";
import { createSignerPool } from "../../core/keys/signer-pool.ts";
import { startTestCore, testConfig, testKeyEncryptionKey, type TestCore } from "../support/core.ts";
import { rejectsWith } from "../support/errors.ts";

const day = 86_400_000;

interface KeyRow {
  issuer: string;
  kid: string;
  alg: string;
  stage: string;
  private_key_ciphertext: Buffer;
  private_key_iv: Buffer;
  private_key_tag: Buffer;
  kek_id: string;
}

/** Verifies `token` against `jwks` as a relying party would; resolves to the kid it was signed with. */
async function verify(token: string, jwks: Jwks, alg: SigningAlg = "RS256"): Promise<string> {
  const { protectedHeader } = await jwtVerify(token, createLocalJWKSet(jwks as JSONWebKeySet), { algorithms: [alg] });
  return protectedHeader.kid!;
}

/** The kids of the JWKS's keys of `alg` (RS256 unless told), in its order. */
function kids(jwks: Jwks, alg: SigningAlg = "RS256"): string[] {
  return jwks.keys.filter((key) => key.alg === alg).map((key) => key.kid);
}

const allKids = (jwks: Jwks) => jwks.keys.map((key) => key.kid);

describe("signing keys", () => {
  let t: TestCore;
  let other: TestCore; // a second instance on the same database
  const signer = createSignerPool(1);
  const sql = <T = KeyRow>(query: string, params: unknown[] = []) => t.orm.em.fork().getConnection().execute<T[]>(query, params);
  const keyRows = (issuer: string, alg: SigningAlg = "RS256") => sql(`select * from signing_keys where issuer = ? and alg = ? order by stage`, [issuer, alg]);
  /** The kid in each stage, from the database (another instance's rotation is not in this one's cache yet). */
  const stored = async (issuer: string, alg: SigningAlg = "RS256") => Object.fromEntries((await keyRows(issuer, alg)).map((r) => [r.stage, r.kid]));

  /** Another instance's view of the keys: its own cache, the same database and KEK. */
  const anotherInstance = () =>
    createSigningKeys({
      orm: t.orm,
      clock: t.clock,
      logger: pino({ level: "silent" }),
      keyEncryptionKey: () => keyEncryptionKey(testKeyEncryptionKey),
      rotationDays: 30,
      signer,
    });

  before(async () => {
    t = await startTestCore();
    other = await startTestCore(testConfig, { database: t.database });
  });
  after(async () => {
    await signer.close();
    await other?.close();
    await t?.close();
  });

  it("gives an issuer a current and a next key of each algorithm on first use, once, even when two instances ask at once", async () => {
    const [a, b] = await Promise.all([t.signingKeys.jwks("account"), other.signingKeys.jwks("account")]);
    assert.deepEqual(allKids(a), allKids(b));
    assert.deepEqual(
      a.keys.map((key) => key.alg),
      ["RS256", "RS256", "ES256", "ES256", "EdDSA", "EdDSA"],
    );
    const rows = await sql(`select * from signing_keys where issuer = 'account'`);
    assert.deepEqual(rows.map((r) => `${r.alg} ${r.stage}`).sort(), ["ES256 current", "ES256 next", "EdDSA current", "EdDSA next", "RS256 current", "RS256 next"]);
  });

  it("signs RS256 with the current key, claims as given and header extras kept", async () => {
    const token = await t.signingKeys.sign("game", { sub: "player", aud: "app" }, { typ: "JWT" });
    const header = decodeProtectedHeader(token);
    const jwks = await t.signingKeys.jwks("game");
    assert.deepEqual(header, { typ: "JWT", alg: "RS256", kid: jwks.keys[0].kid });
    const { payload } = await jwtVerify(token, createLocalJWKSet(jwks as JSONWebKeySet), { audience: "app" });
    assert.deepEqual(payload, { sub: "player", aud: "app" });
    // A caller cannot pick the key or the algorithm.
    const forced = await t.signingKeys.sign("game", {}, { alg: "none", kid: "mine" } as never);
    assert.deepEqual(decodeProtectedHeader(forced), { alg: "RS256", kid: jwks.keys[0].kid });
  });

  it("keeps tokens verifiable across a rotation, whether the verifier's JWKS is from before or after it", async () => {
    const jwksBefore = await t.signingKeys.jwks("game");
    const tokenBefore = await t.signingKeys.sign("game", { sub: "before" });
    const rotated = await t.signingKeys.rotate("game");
    const stages = rotated.RS256;
    const tokenAfter = await t.signingKeys.sign("game", { sub: "after" });
    const jwksAfter = await t.signingKeys.jwks("game");

    assert.equal(stages.previous, jwksBefore.keys[0].kid, "current became previous");
    assert.equal(stages.current, jwksBefore.keys[1].kid, "next became current");
    assert.ok(!kids(jwksBefore).includes(stages.next), "a new next");
    assert.deepEqual(kids(jwksAfter), [stages.current, stages.next, stages.previous]);

    assert.equal(await verify(tokenBefore, jwksAfter), stages.previous);
    assert.equal(await verify(tokenAfter, jwksAfter), stages.current);
    // The verifier cached the JWKS before the rotation: the new signing key was already in it, as next.
    assert.equal(await verify(tokenAfter, jwksBefore), stages.current);
    // Every algorithm rotated alike.
    for (const alg of ["ES256", "EdDSA"] as const) {
      assert.deepEqual(kids(jwksAfter, alg), [rotated[alg].current, rotated[alg].next, rotated[alg].previous]);
      assert.equal(rotated[alg].current, kids(jwksBefore, alg)[1]);
    }
  });

  it("drops the oldest key at the next rotation: three keys, one per stage", async () => {
    const before = await t.signingKeys.jwks("game");
    const stages = (await t.signingKeys.rotate("game")).RS256;
    const after = await t.signingKeys.jwks("game");
    assert.equal(after.keys.length, 9);
    assert.ok(!kids(after).includes(before.keys[2].kid), "the old previous is gone");
    assert.deepEqual((await keyRows("game")).map((r) => [r.stage, r.kid]).sort(), [
      ["current", stages.current],
      ["next", stages.next],
      ["previous", stages.previous],
    ]);
    const [event] = await sql<{ details: Record<string, string> }>(
      `select details from activity_events where action = 'signing_keys.rotated' and details->>'alg' = 'RS256' order by created_at desc limit 1`,
    );
    assert.deepEqual(event.details, { alg: "RS256", ...stages, retired: before.keys[2].kid, trigger: "on_demand" });
  });

  it("keeps the issuers' keys apart: a game token does not verify with the account JWKS", async () => {
    const game = await t.signingKeys.jwks("game");
    const account = await t.signingKeys.jwks("account");
    assert.ok(kids(game).every((kid) => !kids(account).includes(kid)));
    const token = await t.signingKeys.sign("game", { sub: "player" });
    await assert.rejects(verify(token, account), { code: "ERR_JWKS_NO_MATCHING_KEY" });
    const accountToken = await t.signingKeys.sign("account", { sub: "user" });
    await assert.rejects(verify(accountToken, game), { code: "ERR_JWKS_NO_MATCHING_KEY" });
  });

  it("lets two instances rotate at once without forking the stages", async () => {
    const before = await t.signingKeys.jwks("game");
    const [a, b] = (await Promise.all([t.signingKeys.rotate("game"), other.signingKeys.rotate("game")])).map((stages) => stages.RS256);
    const [first, second] = a.current === before.keys[1].kid ? [a, b] : [b, a];
    // They took turns: the second rotated what the first left.
    assert.equal(first.current, before.keys[1].kid);
    assert.equal(second.previous, first.current);
    assert.equal(second.current, first.next);
    const rows = await keyRows("game");
    assert.deepEqual(rows.map((r) => r.stage).sort(), ["current", "next", "previous"]);
    assert.deepEqual(kids(await other.signingKeys.jwks("game")), [second.current, second.next, second.previous]);
  });

  it("while another instance's cache lags a rotation, its tokens still verify; the cache refreshes", async () => {
    const lagging = anotherInstance();
    const old = await lagging.sign("game", { sub: "lag" });
    const stages = (await t.signingKeys.rotate("game")).RS256;
    const stale = await lagging.sign("game", { sub: "lag" });
    assert.equal(await verify(stale, await t.signingKeys.jwks("game")), stages.previous);
    assert.equal(await verify(old, await t.signingKeys.jwks("game")), stages.previous);
    t.clock.advance(61_000); // past the cache's minute
    assert.equal(await verify(await lagging.sign("game", { sub: "lag" }), await t.signingKeys.jwks("game")), stages.current);
  });

  it("purges a compromised issuer's keys: all leave the JWKS at once, tokens they signed stop verifying, and the purge is logged", async () => {
    const lagging = anotherInstance();
    await t.signingKeys.rotate("game"); // so there is a previous key too
    const before = allKids(await t.signingKeys.jwks("game"));
    assert.equal(before.length, 9);
    const leaked = await t.signingKeys.sign("game", { sub: "leaked" });
    assert.deepEqual(allKids(await lagging.jwks("game")), before, "another instance has them cached");

    const result = await t.signingKeys.purge("game");
    const purged = result.stages.RS256;
    assert.deepEqual(new Set(result.withdrawn), new Set(before));
    assert.equal(purged.previous, null);
    const after = await t.signingKeys.jwks("game");
    assert.deepEqual(kids(after), [purged.current, purged.next], "no withdrawn key stays published, not even as previous");
    assert.equal(after.keys.length, 6, "a fresh current and next of each algorithm");
    assert.ok(!before.some((kid) => allKids(after).includes(kid)));
    await assert.rejects(verify(leaked, after), /no applicable key found|JWKSNoMatchingKey/i);
    assert.equal(await verify(await t.signingKeys.sign("game", { sub: "new" }), after), purged.current);
    assert.deepEqual(Object.keys(await stored("game")).sort(), ["current", "next"]);
    assert.deepEqual(Object.keys(await stored("game", "EdDSA")).sort(), ["current", "next"]);

    // The other instance drops them at its next refresh, well before its cache's minute.
    await lagging.refresh();
    assert.deepEqual(kids(await lagging.jwks("game")), [purged.current, purged.next]);
    assert.equal(await verify(await lagging.sign("game", { sub: "other" }), after), purged.current);

    const events = await sql<{ action: string; details: { withdrawn: string } }>(
      `select action, details from activity_events where action = 'signing_keys.purged' and target_id = 'game'`,
    );
    assert.equal(events.length, 3, "one per algorithm");
    assert.deepEqual(new Set(events.flatMap((event) => event.details.withdrawn.split(" "))), new Set(before));
  });

  it("refresh keeps a cache whose kids did not change (it reads kids, not whole keys, to decide)", async () => {
    const cachedBefore = await t.signingKeys.jwks("account");
    // Marks the stored current key without changing its kid: only a re-read would show the mark.
    await sql(`update signing_keys set public_jwk = jsonb_set(public_jwk, '{e}', '"marked"') where issuer = 'account' and alg = 'RS256' and stage = 'current'`);
    try {
      await t.signingKeys.refresh();
      assert.deepEqual(await t.signingKeys.jwks("account"), cachedBefore, "still the cached keys");
      t.clock.advance(61_000);
      assert.ok(
        (await t.signingKeys.jwks("account")).keys.some((key) => key.kty === "RSA" && key.e === "marked"),
        "the mark shows once the cache is re-read",
      );
    } finally {
      await sql(`update signing_keys set public_jwk = jsonb_set(public_jwk, '{e}', '"AQAB"') where issuer = 'account' and alg = 'RS256' and stage = 'current'`);
      t.clock.advance(61_000);
    }
  });

  describe("at rest", () => {
    it("stores private keys only encrypted: AES-256-GCM under the KEK, not the PKCS #8", async () => {
      const rows = await sql(`select * from signing_keys`);
      assert.ok(rows.length >= 4); // current and next of each issuer, at least
      const kek = keyEncryptionKey(testKeyEncryptionKey);
      for (const row of rows) {
        assert.equal(row.kek_id, kek.id);
        const stored = Buffer.concat([row.private_key_ciphertext, row.private_key_iv, row.private_key_tag]);
        assert.ok(!stored.toString("latin1").includes("PRIVATE KEY"));
        const sealed = { ciphertext: row.private_key_ciphertext, iv: row.private_key_iv, tag: row.private_key_tag, kekId: row.kek_id };
        const pkcs8 = open(kek, sealed, sealLabel(row.issuer as IssuerName, row.kid));
        assert.notDeepEqual(row.private_key_ciphertext, pkcs8);
        assert.ok(!row.private_key_ciphertext.includes(pkcs8.subarray(0, 64)), "no run of the PKCS #8 in the ciphertext");
        // And it is the private half of the published key.
        const privateKey = createPrivateKey({ key: pkcs8, format: "der", type: "pkcs8" });
        const publicJwk = createPublicKey(privateKey).export({ format: "jwk" });
        const [{ public_jwk }] = await sql<{ public_jwk: { n?: string; x?: string } }>(`select public_jwk from signing_keys where kid = ?`, [row.kid]);
        assert.equal(publicJwk.n ?? publicJwk.x, public_jwk.n ?? public_jwk.x);
        assert.ok(publicJwk.n ?? publicJwk.x);
        // Bound to its issuer and kid: the same bytes under another label do not open.
        assert.throws(() => open(kek, sealed, sealLabel("account", "elsewhere")), KeyEncryptionError);
      }
    });

    it("refuses a different KEY_ENCRYPTION_KEY with a clear error, to sign and to rotate", async () => {
      const wrong = await startTestCore(testConfig, { database: t.database, keyEncryptionKey: randomBytes(32) });
      try {
        const clear = /encrypted with key-encryption key \S+, but KEY_ENCRYPTION_KEY is \S+; start Outpost with the KEY_ENCRYPTION_KEY the keys were created with/;
        await assert.rejects(wrong.signingKeys.sign("game", { sub: "x" }), (error: unknown) => error instanceof KeyEncryptionError && clear.test(error.message));
        await assert.rejects(wrong.signingKeys.rotateDue(), (error: unknown) => error instanceof KeyEncryptionError && clear.test(error.message));
        const before = allKids(await t.signingKeys.jwks("game"));
        const refused = await rejectsWith(wrong.client(KeysService).rotateKeys({ issuer: Issuer.GAME }), Code.FailedPrecondition, "failed_precondition");
        assert.match(refused.rawMessage, clear);
        const rows = await sql(`select * from signing_keys where issuer = 'game'`);
        assert.deepEqual(rows.map((r) => r.kid).sort(), [...before].sort(), "nothing rotated");
        // The public keys need no KEK.
        assert.deepEqual(allKids(await wrong.signingKeys.jwks("game")), before);
      } finally {
        await wrong.close();
      }
    });

    it("refuses a private key altered in the database", async () => {
      const [row] = await sql(`select * from signing_keys where issuer = 'account' and alg = 'RS256' and stage = 'current'`);
      const altered = Buffer.from(row.private_key_ciphertext);
      altered[10] ^= 1;
      await sql(`update signing_keys set private_key_ciphertext = ? where kid = ?`, [altered, row.kid]);
      const fresh = await startTestCore(testConfig, { database: t.database });
      try {
        await assert.rejects(fresh.signingKeys.sign("account", {}), /does not decrypt with key-encryption key \S+: it was altered in the database/);
      } finally {
        await fresh.close();
        await sql(`update signing_keys set private_key_ciphertext = ? where kid = ?`, [row.private_key_ciphertext, row.kid]);
      }
    });
  });

  describe("scheduled rotation", () => {
    it("rotates a key that has been current for the rotation period, and not a fresh one", async () => {
      assert.deepEqual(await t.signingKeys.rotateDue(), []);
      const before = await stored("account");
      t.clock.advance(29 * day);
      other.clock.advance(29 * day);
      assert.deepEqual(await t.signingKeys.rotateDue(), []);
      t.clock.advance(day + 1000);
      other.clock.advance(day + 1000);
      // Two instances find it due at the same moment: one rotates.
      const [a, b] = await Promise.all([t.signingKeys.rotateDue(), other.signingKeys.rotateDue()]);
      assert.deepEqual([...a, ...b].sort(), ["account", "game"]);
      const after = await stored("account");
      assert.deepEqual([after.current, after.previous], [before.next, before.current]);
      // The key that just became current is fresh.
      assert.deepEqual(await t.signingKeys.rotateDue(), []);
      const [{ count }] = await sql<{ count: string }>(
        `select count(*) from activity_events where action = 'signing_keys.rotated' and details->>'trigger' = 'scheduled'`,
      );
      assert.equal(Number(count), 6, "both issuers, each algorithm");
    });

    it("leaves an issuer without keys alone (its keys come with first use)", async () => {
      const fresh = await startTestCore();
      try {
        fresh.clock.advance(400 * day);
        assert.deepEqual(await fresh.signingKeys.rotateDue(), []);
        const [{ count }] = await fresh.orm.em.fork().getConnection().execute<{ count: string }[]>(`select count(*) from signing_keys`);
        assert.equal(Number(count), 0);
      } finally {
        await fresh.close();
      }
    });
  });

  describe("KeysService (internal)", () => {
    it("answers the JWKS, whose JSON form is the JWKS document", async () => {
      const res = await t.client(KeysService).getJwks({ issuer: Issuer.GAME });
      assert.deepEqual(toJson(GetJwksResponseSchema, res), await t.signingKeys.jwks("game"));
    });

    it("rotates, answering the kids of each stage", async () => {
      const before = await stored("account");
      const res = await t.client(KeysService).rotateKeys({ issuer: Issuer.ACCOUNT });
      assert.equal(res.previousKid, before.current);
      assert.equal(res.currentKid, before.next);
      const jwks = await t.signingKeys.jwks("account");
      assert.deepEqual(kids(jwks), [res.currentKid, res.nextKid, res.previousKid]);
      assert.deepEqual(
        res.algorithms.map((keys) => [keys.alg, keys.currentKid, keys.nextKid, keys.previousKid]),
        (["RS256", "ES256", "EdDSA"] as const).map((alg) => [alg, ...kids(jwks, alg)]),
      );
    });

    it("refuses an unspecified issuer", async () => {
      await rejectsWith(t.client(KeysService).getJwks({ issuer: Issuer.UNSPECIFIED }), Code.InvalidArgument);
      await rejectsWith(t.client(KeysService).rotateKeys({ issuer: 7 as Issuer }), Code.InvalidArgument);
    });

    it("is not among the public routes", async () => {
      const publicTransport = createRouterTransport(t.core.publicRoutes, { router: { interceptors: t.core.interceptors } });
      await rejectsWith(createClient(KeysService, publicTransport).getJwks({ issuer: Issuer.GAME }), Code.Unimplemented);
    });
  });
});
